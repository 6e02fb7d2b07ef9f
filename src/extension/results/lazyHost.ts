import type * as vscode from 'vscode';

/** Where a lazily loaded module puts its command handlers and panel serializers (see results/index.ts). */
export interface LazyHost {
  command(id: string, handler: (...args: unknown[]) => unknown): void;
  serializer(viewType: string, serializer: vscode.WebviewPanelSerializer): void;
}
