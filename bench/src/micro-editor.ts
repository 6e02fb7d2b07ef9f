// Editor-side micro-benchmarks: what a person waits for in VS Code.
//  - activation: loading dist/extension.js and running activate() against a stub of the vscode module (the
//    extension's own cost; VS Code's is the same for every extension);
//  - preview: a task-file edit to the preview's new items and highlights on a 300 KB page;
//  - results: time to the first rows and to scroll pages with 100,000 stored items;
//  - vsix: the size of the packaged extension (built by run.mjs, passed in).
// Prints { result: {...} } on one line, like the other micro-benchmarks (run.mjs reads that line).
import Module from 'node:module';
import { statSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { measurePreviewLatency } from './previewLatency';
import { runResultsBenchmark } from '../../src/extension/results/bench';

const { values } = parseArgs({
  options: { extension: { type: 'string' }, vsix: { type: 'string' }, items: { type: 'string' } },
});

function vscodeStub(): unknown {
  // Every property is a callable that returns another stub: enough for registrations to "succeed". The module's
  // names are real own properties, as esbuild's ESM interop copies them.
  const handler: ProxyHandler<any> = {
    get: (t, p) =>
      p === 'then'
        ? undefined
        : p === Symbol.toPrimitive
          ? () => ''
          : p in t
            ? t[p]
            : new Proxy(function () {}, handler),
    // Results are plain objects: code assigns to them (item.name = …), which a function would refuse.
    apply: () => new Proxy({}, handler),
    construct: () => new Proxy({}, handler),
  };
  const any = () => new Proxy(function () {}, handler);
  class EventEmitter {
    private listeners: ((e: unknown) => void)[] = [];
    event = (l: (e: unknown) => void) => (this.listeners.push(l), { dispose: () => undefined });
    fire(e: unknown) {
      for (const l of this.listeners) l(e);
    }
    dispose() {}
  }
  const names = [
    'CodeLens',
    'CompletionItem',
    'CompletionItemKind',
    'ConfigurationTarget',
    'Diagnostic',
    'DiagnosticSeverity',
    'Disposable',
    'Hover',
    'MarkdownString',
    'Position',
    'ProgressLocation',
    'Range',
    'Selection',
    'SnippetString',
    'StatusBarAlignment',
    'ThemeIcon',
    'TreeItem',
    'TreeItemCollapsibleState',
    'Uri',
    'ViewColumn',
    'WorkspaceEdit',
    'commands',
    'env',
    'languages',
    'window',
    'workspace',
  ];
  return Object.assign(Object.fromEntries(names.map((n) => [n, any()])), { EventEmitter });
}

function activation(extensionJs: string): { loadMs: number; activateMs: number } {
  const stub = vscodeStub();
  const m = Module as unknown as { _load: (req: string, ...rest: unknown[]) => unknown };
  const load = m._load;
  m._load = (req, ...rest) => (req === 'vscode' ? stub : load(req, ...rest));
  const t0 = performance.now();
  const ext = require(extensionJs) as { activate: (ctx: unknown) => unknown };
  const t1 = performance.now();
  const ctx = new Proxy({ subscriptions: [] as unknown[] }, { get: (t, p) => (p in t ? (t as any)[p] : vscodeStub()) });
  ext.activate(ctx);
  const t2 = performance.now();
  m._load = load;
  return { loadMs: Math.round((t1 - t0) * 10) / 10, activateMs: Math.round((t2 - t1) * 10) / 10 };
}

async function main(): Promise<void> {
  const out: Record<string, unknown> = {};
  if (values.extension) out.activation = activation(values.extension);
  out.preview = [
    measurePreviewLatency({ pageBytes: 300 * 1024, runs: 20 }),
    measurePreviewLatency({ pageBytes: 300 * 1024, runs: 10, shape: 'dense' }),
  ];
  out.results = await runResultsBenchmark({ items: Number(values.items ?? 100_000) });
  if (values.vsix) out.vsixBytes = statSync(values.vsix).size;
  console.log(JSON.stringify({ result: out }));
}

// The activated extension leaves timers behind (its explorer polls): exit once the numbers are out.
void main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
