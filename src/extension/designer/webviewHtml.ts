import { randomBytes } from 'node:crypto';
import * as vscode from 'vscode';

// The preview webview's document. Its CSP is the outer wall around the rendered page: the srcdoc frame inherits
// it, so whatever the page's HTML says, only our nonce'd bundle runs (and the frame is sandboxed without
// allow-scripts anyway), styles come from the extension or are inline, fonts from the extension, and images
// from the extension, data: URLs, and — only when the person turns it on — the page's own origin.

export function nonce(): string {
  return randomBytes(18).toString('base64').replace(/[+/=]/g, '');
}

/** `default-src 'none'` plus exactly what the preview needs. */
export function contentSecurityPolicy(cspSource: string, scriptNonce: string, imageOrigin: string | null): string {
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

export function previewHtml(webview: vscode.Webview, extensionUri: vscode.Uri, imageOrigin: string | null): string {
  const n = nonce();
  const media = (...p: string[]) => webview.asWebviewUri(vscode.Uri.joinPath(extensionUri, 'dist', 'media', ...p)).toString();
  const csp = contentSecurityPolicy(webview.cspSource, n, imageOrigin);
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="stylesheet" href="${media('codicons', 'codicon.css')}" id="vscode-codicon-stylesheet">
<title>Crawl Preview</title>
</head>
<body>
<div id="app" data-image-origin="${imageOrigin ?? ''}"></div>
<script nonce="${n}" src="${media('designer', 'main.js')}"></script>
</body>
</html>`;
}
