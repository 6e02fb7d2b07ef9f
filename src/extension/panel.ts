import type * as vscode from 'vscode';

// What every Crawl Studio webview panel shares (the results view, the dashboard, the designer preview), after
// the one-panel-class model of vscode-extension-samples' webview-sample: the panel wires its webview's messages
// to receive(), posts through post() (and keeps the last message of each type), and is disposed once — when
// the person closes it or the extension disposes it — releasing what it holds, its listeners and the webview.
// The page and its policy come from webview.ts.

export abstract class WebviewPanelBase<ToWebview extends { readonly type: string }> implements vscode.Disposable {
  /** The last message of each type sent to the webview: what tests (and bug reports) look at. */
  readonly lastPosted = new Map<ToWebview['type'], ToWebview>();
  protected disposed = false;
  /** Disposed with the panel, after release(). */
  protected readonly disposables: vscode.Disposable[] = [];

  protected constructor(readonly panel: vscode.WebviewPanel) {
    this.disposables.push(
      panel.onDidDispose(() => this.dispose()),
      panel.webview.onDidReceiveMessage((m: unknown) => void this.receive(m)),
    );
  }

  /** A message from the webview (untrusted: the panel validates it); true when it was acted on. */
  abstract receive(raw: unknown): Promise<boolean>;

  /** What the panel releases when disposed (timers, connections, stores), before its listeners and webview. */
  protected abstract release(): void;

  protected post(m: ToWebview): void {
    if (this.disposed) return;
    this.lastPosted.set(m.type, m);
    void this.panel.webview.postMessage(m);
  }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    this.release();
    for (const d of this.disposables) d.dispose();
    this.panel.dispose();
  }
}
