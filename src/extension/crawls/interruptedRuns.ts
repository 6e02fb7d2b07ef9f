import * as vscode from 'vscode';
import type { Redis } from '../../redis/connect';
import { describeRunPhase, type RunPhase } from '../../observe/runPhase';
import { crawlStoppedMessage } from '../../run/endMessage';
import { engine } from '../lazy';
import type { RedisConnection } from '../redisConnection';
import type { CrawlManager } from './crawlManager';

// The editor after a window reload or a crash (issue 32, item 2). A window's crawls die with its extension host,
// and nothing they wrote says so: every view went on saying "running" with frozen counts, and nothing offered to
// resume. This window remembers (workspace state) the crawls it drives; the next activation, in the reloaded
// window, looks at each of them with the same read every view uses (observe/runPhase.ts), and offers Resume and
// Stop for the ones nobody drives now. The Queue Explorer and the dashboard say "interrupted" by that same read.

const DRIVEN_KEY = 'crawlStudio.drivenCrawls';

interface DrivenCrawl {
  readonly task: string;
  readonly file: string;
}

/** A run stopped by stopUndriven (from the notification, the Queue Explorer or the palette): no longer waiting. */
const undrivenStopped = new vscode.EventEmitter<string>();

const RESUME = vscode.l10n.t('Resume');
const STOP = vscode.l10n.t('Stop');

/** Whether nobody drives the run: its driver is gone, though workers of the fleet may still take its pages. */
function isUndriven(phase: RunPhase): boolean {
  return phase.kind === 'interrupted' || (phase.kind === 'running' && phase.driver === null);
}

/**
 * Ends the run of `task` when nobody drives it (Stop Crawl from any window after a reload): the message said, or
 * null when there was no such run (none, over, or another live process drives it: that process's to stop).
 */
export async function stopUndriven(redis: Redis, task: string): Promise<string | null> {
  const { readTaskStatus, CrawlQueue } = await engine();
  const status = await readTaskStatus(redis, task);
  if (!status.run || !isUndriven(status.phase)) return null;
  const q = new CrawlQueue(redis, task);
  try {
    if (!(await q.stopRun(status.run.run))) return null;
  } finally {
    await q.close();
  }
  undrivenStopped.fire(task);
  return crawlStoppedMessage(task, (await readTaskStatus(redis, task)).stats);
}

export class InterruptedRuns implements vscode.Disposable {
  private readonly sub: vscode.Disposable;
  private readonly stoppedSub = undrivenStopped.event((task) => {
    this.waiting.delete(task);
    this.render();
  });
  /** Beside the crawls' status item: the interrupted ones this window offered to resume, until resumed or stopped. */
  private readonly item = vscode.window.createStatusBarItem(
    'crawlStudio.interrupted',
    vscode.StatusBarAlignment.Left,
    49,
  );
  private readonly waiting = new Map<string, { readonly file: string; readonly phase: RunPhase }>();

  constructor(
    private readonly context: vscode.ExtensionContext,
    private readonly connection: RedisConnection,
    private readonly crawls: CrawlManager,
  ) {
    this.item.name = vscode.l10n.t('Crawl Studio: interrupted crawls');
    this.sub = crawls.onDidChange(() => {
      void this.remember();
      // A crawl this window drives again (Resume) is no longer waiting.
      for (const task of [...this.waiting.keys()]) if (this.crawls.get(task)) this.waiting.delete(task);
      this.render();
    });
  }

  /** The status bar's words, for tests: empty when nothing waits. */
  get statusText(): string {
    return this.waiting.size ? this.item.text : '';
  }

  /**
   * Looks at the crawls the last window drove (call once at activation): each one nobody drives now gets one
   * notification with Resume (Start Crawl, which resumes an unfinished run) and Stop. Resolves with the tasks it
   * offered to resume, for tests.
   */
  async checkLastWindow(): Promise<string[]> {
    const driven = this.context.workspaceState.get<DrivenCrawl[]>(DRIVEN_KEY, []);
    if (driven.length === 0) return [];
    const redis = await this.connection.get();
    const { readTaskStatus } = await engine();
    const offered: string[] = [];
    for (const d of driven) {
      if (this.crawls.get(d.task)) continue;
      const status = await readTaskStatus(redis, d.task).catch(() => null);
      if (!status?.run || !isUndriven(status.phase)) continue;
      offered.push(d.task);
      this.waiting.set(d.task, { file: d.file, phase: status.phase });
      void this.offer(d, status.phase);
    }
    this.render();
    await this.remember();
    return offered;
  }

  private render(): void {
    if (this.waiting.size === 0) {
      this.item.hide();
      return;
    }
    const tasks = [...this.waiting.keys()];
    this.item.text = `$(debug-disconnect) ${vscode.l10n.t('{0} interrupted', tasks.join(', '))}`;
    this.item.tooltip = [...this.waiting]
      .map(([task, w]) => vscode.l10n.t("Crawl '{0}': {1}", task, describeRunPhase(w.phase)))
      .join('\n');
    const [task, first] = [...this.waiting][0]!;
    this.item.command = {
      command: 'crawlStudio.startCrawl',
      title: vscode.l10n.t('Resume {0}', task),
      arguments: [vscode.Uri.file(first.file)],
    };
    this.item.backgroundColor = new vscode.ThemeColor('statusBarItem.warningBackground');
    this.item.show();
  }

  private async offer(d: DrivenCrawl, phase: RunPhase): Promise<void> {
    const answer = await vscode.window.showWarningMessage(
      vscode.l10n.t("Crawl '{0}': {1}", d.task, describeRunPhase(phase)),
      RESUME,
      STOP,
    );
    if (answer === RESUME) await vscode.commands.executeCommand('crawlStudio.startCrawl', vscode.Uri.file(d.file));
    else if (answer === STOP) await vscode.commands.executeCommand('crawlStudio.stopCrawl', d.task);
  }

  /** The crawls this window drives now, kept for the next activation (a reload ends them all). */
  private async remember(): Promise<void> {
    const now: DrivenCrawl[] = this.crawls.list().map((rc) => ({ task: rc.task.name, file: rc.task.file }));
    await this.context.workspaceState.update(DRIVEN_KEY, now);
  }

  dispose(): void {
    this.sub.dispose();
    this.stoppedSub.dispose();
    this.item.dispose();
  }
}
