import * as vscode from 'vscode';

// Job data and other JSON the extension shows (Show Job Data, a result row's job) open as read-only documents of
// their own scheme, named for what they show: an Untitled document would be dirty, ask to be saved on close, and
// pile up one "Untitled-N" per click.

const JSON_SCHEME = 'crawl-studio-json';

class JsonDocuments implements vscode.TextDocumentContentProvider {
  private readonly contents = new Map<string, string>();
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;

  provideTextDocumentContent(uri: vscode.Uri): string {
    return (
      this.contents.get(uri.toString()) ??
      '// This document is no longer available: show it again from the Queue Explorer or the results.'
    );
  }

  set(uri: vscode.Uri, text: string): void {
    const known = this.contents.has(uri.toString());
    this.contents.set(uri.toString(), text);
    // Showing the same job again refreshes the open document rather than leaving the old data in it.
    if (known) this.changed.fire(uri);
  }
}

let provider: JsonDocuments | null = null;

export function registerJsonDocuments(context: vscode.ExtensionContext): void {
  provider = new JsonDocuments();
  context.subscriptions.push(vscode.workspace.registerTextDocumentContentProvider(JSON_SCHEME, provider));
}

/** Opens `content` as a read-only JSON document titled `<title>.json` (e.g. "shop job r1.3f2a…"). */
export async function showJsonDocument(
  title: string,
  content: unknown,
  column?: vscode.ViewColumn,
): Promise<vscode.TextDocument> {
  if (!provider) throw new Error('internal: showJsonDocument before registerJsonDocuments');
  const uri = vscode.Uri.from({ scheme: JSON_SCHEME, path: `/${title.replace(/[\\/]/g, '_')}.json` });
  provider.set(uri, JSON.stringify(content, null, 2));
  let doc = await vscode.workspace.openTextDocument(uri);
  if (doc.languageId !== 'json') doc = await vscode.languages.setTextDocumentLanguage(doc, 'json');
  await vscode.window.showTextDocument(doc, { preview: true, ...(column ? { viewColumn: column } : {}) });
  return doc;
}
