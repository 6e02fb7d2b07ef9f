import * as vscode from 'vscode';

/** Where a lazily loaded module puts its command handlers and panel serializers (see results/index.ts). */
export interface LazyHost {
  command(id: string, handler: (...args: unknown[]) => unknown): void;
  serializer(viewType: string, serializer: vscode.WebviewPanelSerializer): void;
}

/** A command handler whose failure becomes an error notification (the command then answers undefined). */
export function reporting(fn: (...args: any[]) => unknown): (...args: unknown[]) => Promise<unknown> {
  return async (...args: unknown[]) => {
    try {
      return await fn(...args);
    } catch (err) {
      void vscode.window.showErrorMessage(`Crawl Studio: ${err instanceof Error ? err.message : String(err)}`);
      return undefined;
    }
  };
}
