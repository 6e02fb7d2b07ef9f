import * as vscode from 'vscode';
import { randomBytes } from 'node:crypto';

// What every Crawl Studio webview shares: options that confine it to the extension's built media, and a page
// with a strict Content-Security-Policy. Scripts run only with this page's nonce, styles and fonts only from
// dist/media (plus the nonce'd inline style the bundle injects), nothing from the network: no connect-src, no
// remote images. Theme colours come from VS Code's CSS variables.

export function mediaRoot(context: vscode.ExtensionContext): vscode.Uri {
  return vscode.Uri.joinPath(context.extensionUri, 'dist', 'media');
}

export function webviewOptions(context: vscode.ExtensionContext): vscode.WebviewPanelOptions & vscode.WebviewOptions {
  return {
    enableScripts: true,
    enableCommandUris: false,
    localResourceRoots: [mediaRoot(context)],
    // Pages come back from the store in milliseconds; rebuilding beats keeping hidden tables alive.
    retainContextWhenHidden: false,
    enableFindWidget: true,
  };
}

export function nonce(): string {
  return randomBytes(16).toString('base64');
}

/** The page of a webview whose script is dist/media/<view>/main.js. */
export function webviewHtml(context: vscode.ExtensionContext, webview: vscode.Webview, view: string, title: string): string {
  const n = nonce();
  const root = mediaRoot(context);
  const script = webview.asWebviewUri(vscode.Uri.joinPath(root, view, 'main.js'));
  const codicons = webview.asWebviewUri(vscode.Uri.joinPath(root, 'codicons', 'codicon.css'));
  const csp = [
    "default-src 'none'",
    `img-src ${webview.cspSource} data:`,
    `font-src ${webview.cspSource}`,
    `style-src ${webview.cspSource} 'nonce-${n}'`,
    `script-src 'nonce-${n}'`,
  ].join('; ');
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link id="vscode-codicon-stylesheet" rel="stylesheet" href="${codicons}" nonce="${n}">
<title>${escapeHtml(title)}</title>
</head>
<body>
<div id="app" role="application" aria-label="${escapeHtml(title)}"></div>
<script nonce="${n}" src="${script}"></script>
</body>
</html>`;
}

export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}
