import * as vscode from 'vscode';
import { engine } from './lazy';
import type { CrawlManager } from './crawls/crawlManager';

// Lenses on task files: "Start Crawl | Validate | Open Results" at the top ("Stop Crawl" while it runs), and
// "Enqueue" on each start URL. Start or Stop is what the editor title shows too: the crawl manager's running task
// files (by path), refreshed only when that set changes (CrawlManager.onDidChangeRunning, issue 32).

export class TaskCodeLensProvider implements vscode.CodeLensProvider, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<void>();
  readonly onDidChangeCodeLenses = this.changed.event;
  private readonly sub: vscode.Disposable;

  constructor(private readonly crawls: CrawlManager) {
    this.sub = crawls.onDidChangeRunning(() => this.changed.fire());
  }

  async provideCodeLenses(doc: vscode.TextDocument): Promise<vscode.CodeLens[]> {
    const { outlineTask } = await engine();
    const outline = outlineTask(doc.getText());
    const top = new vscode.Range(0, 0, 0, 0);
    const running = this.crawls.isRunning(doc.uri.fsPath);
    const lenses = [
      running
        ? new vscode.CodeLens(top, {
            title: '$(debug-stop) Stop Crawl',
            command: 'crawlStudio.stopCrawl',
            arguments: [doc.uri],
          })
        : new vscode.CodeLens(top, {
            title: '$(play) Start Crawl',
            command: 'crawlStudio.startCrawl',
            arguments: [doc.uri],
          }),
      new vscode.CodeLens(top, {
        title: '$(check) Validate',
        command: 'crawlStudio.validateTask',
        arguments: [doc.uri],
      }),
      new vscode.CodeLens(top, {
        title: '$(table) Open Results',
        command: 'crawlStudio.openResults',
        arguments: [doc.uri],
      }),
    ];
    for (const s of outline.startUrls) {
      const pos = doc.positionAt(s.span.offset);
      lenses.push(
        new vscode.CodeLens(new vscode.Range(pos, pos), {
          title: '$(add) Enqueue',
          command: 'crawlStudio.enqueueUrl',
          arguments: [doc.uri, s.url],
        }),
      );
    }
    return lenses;
  }

  dispose(): void {
    this.sub.dispose();
    this.changed.dispose();
  }
}
