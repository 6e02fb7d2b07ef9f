import * as vscode from 'vscode';
import { registerDesigner } from './designer';

export function activate(context: vscode.ExtensionContext): void {
  context.subscriptions.push(
    vscode.commands.registerCommand('crawlStudio.version', () => context.extension.packageJSON.version as string),
  );
  registerDesigner(context);
}

export function deactivate(): void {}
