// The extension host on the other side of the dashboard: the one VS Code API of this webview.

import type { FromDashboard } from '../../src/extension/dashboard/protocol';

export const vscode = acquireVsCodeApi<{ file: string }>();
export const send = (m: FromDashboard) => vscode.postMessage(m);
