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

const RESUME = vscode.l10n.t('Resume');
const STOP = vscode.l10n.t('Stop');

/** Whether nobody drives the run: its driver is gone, though workers of the fleet may still take its pages. */
export function isUndriven(phase: RunPhase): boolean {
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
  return crawlStoppedMessage(task, (await readTaskStatus(redis, task)).stats);
}

export class InterruptedRuns implements vscode.Disposable {
  private readonly sub: vscode.Disposable;

  constructor(
    private readonly context: vscode.ExtensionContext,
    private readonly connection: RedisConnection,
    private readonly crawls: CrawlManager,
  ) {
    this.sub = crawls.onDidChange(() => void this.remember());
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
      void this.offer(d, status.phase);
    }
    await this.remember();
    return offered;
  }

  private async offer(d: DrivenCrawl, phase: RunPhase): Promise<void> {
    const answer = await vscode.window.showWarningMessage(vscode.l10n.t("Crawl '{0}': {1}", d.task, describeRunPhase(phase)), RESUME, STOP);
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
  }
}
