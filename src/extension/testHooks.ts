import * as vscode from 'vscode';

// Test-only commands (crawlStudio.results.test*, crawlStudio.dashboard.test*, crawlStudio.designer._*): what a
// panel last posted, a message as if from its webview. They are never contributed in package.json and are
// registered only when the extension host runs a test suite (ExtensionMode.Test: VS Code or code-server started
// with extensionTestsPath and this extension as the development extension), so the shipped product has none.

export function testHooksEnabled(context: vscode.ExtensionContext): boolean {
  return context.extensionMode === vscode.ExtensionMode.Test;
}
