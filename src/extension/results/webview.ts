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

// ---- Validation of messages from a webview: they are untrusted input. ----------------------------------------

export type Check<T> = (v: unknown) => v is T;

export const isStr = (max = 1000): Check<string> => (v): v is string => typeof v === 'string' && v.length <= max;
export const isInt = (min: number, max: number): Check<number> => (v): v is number => Number.isInteger(v) && (v as number) >= min && (v as number) <= max;
export const isBool: Check<boolean> = (v): v is boolean => typeof v === 'boolean';
export const isOneOf = <T extends string>(...values: readonly T[]): Check<T> => (v): v is T => typeof v === 'string' && (values as readonly string[]).includes(v);

export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Checks an object's fields; extra fields are refused too, so nothing unexpected reaches a handler. */
export function hasShape(v: unknown, shape: Readonly<Record<string, Check<unknown>>>, optional: readonly string[] = []): v is Record<string, unknown> {
  if (!isRecord(v)) return false;
  for (const k of Object.keys(v)) if (!(k in shape)) return false;
  for (const [k, check] of Object.entries(shape)) {
    if (!(k in v)) {
      if (optional.includes(k)) continue;
      return false;
    }
    if (!check(v[k])) return false;
  }
  return true;
}
