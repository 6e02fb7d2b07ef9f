// The extension host on the other side of the preview: the one VS Code API of this webview.

export const vscode = acquireVsCodeApi();
export const post = (msg: unknown) => vscode.postMessage(msg);
