import * as vscode from 'vscode';
import type { CrawlManager } from './crawls/crawlManager';

// While crawls run: pages/s, queue depth and failures; a click focuses the Queue Explorer.

export class CrawlStatusBar implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem('crawlStudio.status', vscode.StatusBarAlignment.Left, 50);
  private readonly sub: vscode.Disposable;

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
    const parts = running.map((rc) => {
      const c = rc.status?.counts;
      const queued = c ? c.waiting + c.prioritized + c.delayed + c.active : 0;
      return `${rc.task.name} ${rc.pagesPerSec.toFixed(1)} p/s · queue ${queued} · ${rc.status?.stats?.failed ?? 0} failed`;
    });
    this.item.text = `$(sync~spin) ${parts.join('  |  ')}`;
    this.item.tooltip = 'Crawl Studio: running crawls (click to show the Queue Explorer)';
    this.item.show();
  }

  dispose(): void {
    this.sub.dispose();
    this.item.dispose();
  }
}
