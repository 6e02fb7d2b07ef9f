import type * as vscode from 'vscode';

// Which documents are task files; light enough to load at activation.
export const TASK_FILES: vscode.DocumentSelector = [{ pattern: '**/*.crawl.{yaml,yml}' }];

export function isTaskDocument(doc: vscode.TextDocument): boolean {
  return /\.crawl\.ya?ml$/.test(doc.uri.path);
}
