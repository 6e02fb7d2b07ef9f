import * as vscode from 'vscode';
import type { TaskDiagnostic } from '../core/task/diagnostics';

// Task-file problems in the Problems panel, from the same validator the CLI runs.

export class TaskProblems implements vscode.Disposable {
  readonly collection = vscode.languages.createDiagnosticCollection('crawl-studio');

  publish(uri: vscode.Uri, diagnostics: readonly TaskDiagnostic[]): void {
    this.collection.set(uri, diagnostics.map(toVscode));
  }

  dispose(): void {
    this.collection.dispose();
  }
}

export function toVscode(d: TaskDiagnostic): vscode.Diagnostic {
  const range = new vscode.Range(d.line - 1, d.column - 1, d.endLine - 1, Math.max(d.endColumn - 1, d.column));
  const diag = new vscode.Diagnostic(range, d.path ? `${d.path}: ${d.message}` : d.message, d.severity === 'error' ? vscode.DiagnosticSeverity.Error : vscode.DiagnosticSeverity.Warning);
  diag.source = 'Crawl Studio';
  return diag;
}
