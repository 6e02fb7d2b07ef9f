import * as vscode from 'vscode';
import type { CrawlManager, RunningCrawl } from './crawls/crawlManager';
import { describeQueue, finishedPages, queuedJobs } from '../observe/figures';

// While crawls run: pages/s, queue depth and failures; a click focuses the Queue Explorer. Figures the session has
// not refreshed for a while (Redis unreachable, a stuck process) are marked as such, never shown as if live. Each
// figure is named by observe/figures.ts, as the Queue Explorer, the Workers view and the dashboard name it.

/** A crawl's figures count as stale once its session has not reported for this long (it reports every second). */
const STALE_AFTER_MS = 5_000;

export class CrawlStatusBar implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem('crawlStudio.status', vscode.StatusBarAlignment.Left, 50);
  private readonly sub: vscode.Disposable;
  /** Re-renders while crawls run, so figures turn stale even when no report comes to trigger an update. */
  private readonly clock = setInterval(() => this.crawls.list().length > 0 && this.update(), 1_000);

  constructor(private readonly crawls: CrawlManager) {
    this.item.name = 'Crawl Studio';
    this.item.command = 'crawlStudio.queueExplorer.focus';
    this.sub = crawls.onDidChange(() => this.update());
  }

  /** The text shown, for tests. */
  get text(): string {
    return this.item.text;
  }

  private update(): void {
    const running = this.crawls.list();
    if (running.length === 0) {
      this.item.hide();
      return;
    }
    const now = Date.now();
    const stale = running.filter((rc) => now - rc.statusAt > STALE_AFTER_MS);
    const parts = running.map((rc) => {
      const age = now - rc.statusAt;
      if (age > STALE_AFTER_MS)
        return vscode.l10n.t('{0} no progress report for {1} s', rc.task.name, Math.round(age / 1000));
      const c = rc.status?.counts;
      // Paused from anywhere (the explorer, the web monitor, `crawl-studio pause`): "0.0 p/s" under a spinner said
      // nothing of why.
      if (rc.status?.isPaused)
        return vscode.l10n.t(
          '{0} paused · {1} p/s · queue {2} · {3} failed',
          rc.task.name,
          rc.pagesPerSec.toFixed(1),
          c ? queuedJobs(c) : 0,
          finishedPages(rc.status.stats).failed,
        );
      return vscode.l10n.t(
        '{0} {1} p/s · queue {2} · {3} failed',
        rc.task.name,
        rc.pagesPerSec.toFixed(1),
        c ? queuedJobs(c) : 0,
        finishedPages(rc.status?.stats ?? null).failed,
      );
    });
    const icon = stale.length
      ? '$(warning)'
      : running.every((rc) => rc.status?.isPaused)
        ? '$(debug-pause)'
        : '$(sync~spin)';
    this.item.text = `${icon} ${parts.join('  |  ')}`;
    this.item.backgroundColor = stale.length ? new vscode.ThemeColor('statusBarItem.warningBackground') : undefined;
    this.item.tooltip = stale.length
      ? vscode.l10n.t(
          'Crawl Studio: {0} reported nothing for a while: Redis may be unreachable. The crawl carries on by itself when it returns.',
          stale.map((rc) => `'${rc.task.name}'`).join(', '),
        )
      : `${vscode.l10n.t('Crawl Studio: running crawls (click to show the Queue Explorer)')}\n${running.map(tooltipLine).join('\n')}`;
    this.item.show();
  }

  /** The figures behind the text, in the Queue Explorer's words. */
  get tooltip(): string {
    const tip = this.item.tooltip;
    return typeof tip === 'string' ? tip : (tip?.value ?? '');
  }

  dispose(): void {
    clearInterval(this.clock);
    this.sub.dispose();
    this.item.dispose();
  }
}

/** One crawl's figures in the explorer's words: "shop: 2 waiting · 0 active · 11 delayed; 40 done, 3 skipped, 1 failed; 1.0 pages/s (last 30 s)". */
function tooltipLine(rc: RunningCrawl): string {
  const c = rc.status?.counts;
  const f = finishedPages(rc.status?.stats ?? null);
  return vscode.l10n.t(
    '{0}: {1}; {2} done, {3} skipped, {4} failed; {5} {6}',
    rc.task.name,
    c ? describeQueue(c) : vscode.l10n.t('starting'),
    f.done,
    f.skipped,
    f.failed,
    rc.pagesPerSec.toFixed(1),
    rc.rateLabel,
  );
}
