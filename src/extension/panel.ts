import * as vscode from 'vscode';

// What every Crawl Studio webview panel shares (the results view, the dashboard, the designer preview), after
// the one-panel-class model of vscode-extension-samples' webview-sample: the panel wires its webview's messages
// to receive(), posts through post() (and keeps the last message of each type), and is disposed once — when
// the person closes it or the extension disposes it — releasing what it holds, its listeners and the webview.
// PanelRegistry opens one panel per task file (or revives the one VS Code restores). The page and its policy
// come from webview.ts.

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

/** One panel per key (a task file): opened, revealed, revived after a reload, forgotten when disposed. */
export class PanelRegistry<P extends WebviewPanelBase<{ readonly type: string }>> {
  private readonly open = new Map<string, P>();

  constructor(private readonly viewType: string) {}

  get(key: string): P | undefined {
    return this.open.get(key);
  }

  values(): IterableIterator<P> {
    return this.open.values();
  }

  /**
   * The panel of `key`: the open one, revealed; else `revived` (a panel VS Code restored through the
   * serializer) or a new webview panel, titled `title`, given to `make`. `created` says which.
   */
  show(
    key: string,
    title: string,
    options: vscode.WebviewPanelOptions & vscode.WebviewOptions,
    revived: vscode.WebviewPanel | undefined,
    make: (panel: vscode.WebviewPanel) => P,
  ): { panel: P; created: boolean } {
    const open = this.open.get(key);
    if (open && !revived) {
      open.panel.reveal();
      return { panel: open, created: false };
    }
    const webviewPanel =
      revived ?? vscode.window.createWebviewPanel(this.viewType, title, vscode.ViewColumn.Active, options);
    webviewPanel.title = title;
    const panel = make(webviewPanel);
    this.open.set(key, panel);
    return { panel, created: true };
  }

  /** Called by a panel's release(): forgets it, unless another panel has taken its key since. */
  forget(key: string, panel: P): void {
    if (this.open.get(key) === panel) this.open.delete(key);
  }
}
