import * as vscode from 'vscode';

// Loading on first use, one pattern for the whole extension: activation registers command ids and panel
// serializers only; the code behind them (BullMQ, ioredis, cheerio, yaml, ajv, the stores) is a dynamic import
// that esbuild wraps in a lazy initialiser, evaluated the first time one of them is used.

/** A memoised loader: `load` runs on the first call, and every call answers the same promise. */
export function lazily<T>(load: () => Promise<T>): () => Promise<T> {
  let loading: Promise<T> | null = null;
  return () => (loading ??= load());
}

type Engine = typeof import('./engine');

/** The engine parts (see engine.ts). */
export const engine: () => Promise<Engine> = lazily(() => import('./engine'));

export type Handler = (...args: never[]) => unknown;

/** Where a lazily loaded module puts its command handlers and panel serializers. */
export interface LazyHost {
  command(id: string, handler: Handler): void;
  serializer(viewType: string, serializer: vscode.WebviewPanelSerializer): void;
}

export interface LazyModule<T> {
  /** Command ids registered at activation; each loads the module, then runs the handler it registered. */
  readonly commands: readonly string[];
  /** Webview panel types whose serializer the module provides (so its panels come back after a reload). */
  readonly viewTypes?: readonly string[];
  /** Loads the module and lets it register its handlers and serializers on `host`. */
  load(host: LazyHost): Promise<T>;
}

/** Registers a module's command ids and serializers now; answers its loader (memoised). */
export function registerLazy<T>(context: vscode.ExtensionContext, module: LazyModule<T>): () => Promise<T> {
  const handlers = new Map<string, Handler>();
  const serializers = new Map<string, vscode.WebviewPanelSerializer>();
  const host: LazyHost = {
    command: (id, handler) => {
      handlers.set(id, handler);
      // A handler the list does not know still works, registered when the module loads.
      if (!module.commands.includes(id))
        context.subscriptions.push(vscode.commands.registerCommand(id, handler as (...args: unknown[]) => unknown));
    },
    serializer: (viewType, s) => serializers.set(viewType, s),
  };
  const load = lazily(() => module.load(host));
  for (const id of module.commands) {
    context.subscriptions.push(
      vscode.commands.registerCommand(id, async (...args: unknown[]) => {
        await load();
        return (handlers.get(id) as ((...a: unknown[]) => unknown) | undefined)?.(...args);
      }),
    );
  }
  for (const viewType of module.viewTypes ?? []) {
    context.subscriptions.push(
      vscode.window.registerWebviewPanelSerializer(viewType, {
        async deserializeWebviewPanel(panel, state) {
          await load();
          await serializers.get(viewType)?.deserializeWebviewPanel(panel, state);
        },
      }),
    );
  }
  return load;
}
