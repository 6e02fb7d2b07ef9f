import { randomBytes } from 'node:crypto';
import * as vscode from 'vscode';

// Every Crawl Studio webview's options and page, in one place. A webview is confined to the extension's built
// media (plus, for the designer preview, its page cache); its page has a strict Content-Security-Policy:
// `default-src 'none'`, scripts only with the page's nonce (our bundle, dist/media/<view>/main.js), styles and
// fonts from dist/media, nothing from the network (no connect-src, no remote scripts or images). Theme colours
// come from VS Code's CSS variables.

export function mediaRoot(extensionUri: vscode.Uri): vscode.Uri {
  return vscode.Uri.joinPath(extensionUri, 'dist', 'media');
}

/** Scripts for our bundle only, no command URIs, files from dist/media; `overrides` per panel. */
export function webviewOptions(
  extensionUri: vscode.Uri,
  overrides: vscode.WebviewPanelOptions & vscode.WebviewOptions = {},
): vscode.WebviewPanelOptions & vscode.WebviewOptions {
  return {
    enableScripts: true,
    enableCommandUris: false,
    localResourceRoots: [mediaRoot(extensionUri)],
    // The host re-sends the state when a webview comes back, so a hidden panel holds no renderer memory.
    retainContextWhenHidden: false,
    ...overrides,
  };
}

/** The results view's and the dashboard's options: the defaults and the find widget (Ctrl+F in a table). */
export function panelOptions(extensionUri: vscode.Uri): vscode.WebviewPanelOptions & vscode.WebviewOptions {
  return webviewOptions(extensionUri, { enableFindWidget: true });
}

/**
 * A task's table panel (the results view, the dashboard), created or revived: panelOptions, the extension's icon,
 * and the page of `view` with its title.
 */
export function initTablePanel(
  panel: vscode.WebviewPanel,
  extensionUri: vscode.Uri,
  view: string,
  title: string,
): void {
  panel.webview.options = panelOptions(extensionUri);
  panel.iconPath = vscode.Uri.joinPath(extensionUri, 'media', 'icon.svg');
  panel.webview.html = webviewHtml(panel.webview, extensionUri, {
    view,
    title,
    app: { role: 'application', 'aria-label': title },
  });
}

export function nonce(): string {
  return randomBytes(18).toString('base64').replace(/[+/=]/g, '');
}

/** The results view's and the dashboard's policy: nothing but our nonce'd script and style, fonts and images. */
function panelCsp(cspSource: string, scriptNonce: string): string {
  return [
    "default-src 'none'",
    `img-src ${cspSource} data:`,
    `font-src ${cspSource}`,
    `style-src ${cspSource} 'nonce-${scriptNonce}'`,
    `script-src 'nonce-${scriptNonce}'`,
  ].join('; ');
}

/**
 * The designer preview's policy, the outer wall around the rendered page: the srcdoc frame inherits it, so
 * whatever the page's HTML says, only our nonce'd bundle runs (and the frame is sandboxed without allow-scripts
 * anyway), styles come from the extension or are inline, fonts from the extension, and images from the
 * extension, data: URLs, and — only when the person turns it on — the page's own origin.
 */
export function previewCsp(cspSource: string, scriptNonce: string, imageOrigin: string | null): string {
  return [
    "default-src 'none'",
    `script-src 'nonce-${scriptNonce}'`,
    // Inline styles: the page's own <style> in the frame, and the elements' constructed stylesheets.
    `style-src ${cspSource} 'unsafe-inline'`,
    `font-src ${cspSource}`,
    `img-src ${cspSource} data:${imageOrigin ? ` ${imageOrigin}` : ''}`,
    // The page frame is srcdoc (same origin as the webview); nothing else may be framed or navigated to.
    "frame-src 'self'",
    "child-src 'self'",
    "form-action 'none'",
    "base-uri 'none'",
  ].join('; ');
}

export interface PageOptions {
  /** dist/media/<view>/main.js is the page's script. */
  readonly view: string;
  readonly title: string;
  /** The policy, given the webview's cspSource and the page's nonce (panelCsp by default). */
  readonly csp?: (cspSource: string, nonce: string) => string;
  /** Attributes of the page's #app element, escaped here. */
  readonly app?: Readonly<Record<string, string>>;
}

/** The page of a webview: its policy, the codicons, an #app element and the nonce'd bundle. */
export function webviewHtml(webview: vscode.Webview, extensionUri: vscode.Uri, opts: PageOptions): string {
  const n = nonce();
  const media = (...p: string[]) => webview.asWebviewUri(vscode.Uri.joinPath(mediaRoot(extensionUri), ...p)).toString();
  const csp = (opts.csp ?? panelCsp)(webview.cspSource, n);
  const app = Object.entries(opts.app ?? {})
    .map(([k, v]) => ` ${k}="${escapeHtml(v)}"`)
    .join('');
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link id="vscode-codicon-stylesheet" rel="stylesheet" href="${media('codicons', 'codicon.css')}" nonce="${n}">
<title>${escapeHtml(opts.title)}</title>
</head>
<body>
<div id="app"${app}></div>
<script nonce="${n}" src="${media(opts.view, 'main.js')}"></script>
</body>
</html>`;
}

function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}
