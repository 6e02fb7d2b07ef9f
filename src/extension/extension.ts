import * as vscode from 'vscode';

// Placeholder activation; the explorer, commands and views arrive with their issues.
export function activate(context: vscode.ExtensionContext): void {
  context.subscriptions.push(
    vscode.commands.registerCommand('crawlStudio.version', () => context.extension.packageJSON.version as string),
  );
}

export function deactivate(): void {}
