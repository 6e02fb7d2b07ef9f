// One copy of the engine for the extension host and the worker processes it starts.
//
// The worker bundle (dist/worker.bundle.js) holds the engine: BullMQ, ioredis, the frontier, the fetcher, parsing
// and extraction. The extension uses most of it (launching a crawl, the explorer's queues, the designer's preview
// fetching a page as a worker does), and once carried a copy of its own: 3 MB of its 3.4 MB, a third of the .vsix
// (issue 34). Now extension.js bundles only the modules the worker does not hold and takes every other one from
// the worker bundle at run time, through `engineModule(name)`, the one export of the worker bundle's entry.
// Required that way the bundle runs no worker: its entry starts one only as the process's main module
// (src/worker/entry.ts).
//
// Which modules those are comes from esbuild itself, in three steps (esbuild has no code splitting for CommonJS):
//   1. engineGraphOptions: one metafile build of both entry points, nothing written; planFrom(its metafile): the
//      modules reachable from the worker's entry are the engine, those the extension's own modules import from it
//      are what the engine exports.
//   2. the extension's build with fromEngine(plan): an import that resolves into the engine becomes
//      `require('./worker.bundle.js').engineModule(name)`.
//   3. the worker's build with engineEntry(plan): its entry is the worker's, plus the table of exported modules.
// Steps 2 and 3 run side by side. A module is keyed as esbuild's metafile names it: its path from the working
// folder, or `namespace:path` for a plugin's module (the task validator); in the bundles, by its name (nameOf).
import { relative, resolve, sep } from 'node:path';

const ENGINE_FILE = './worker.bundle.js';
const ENTRY = 'crawl-studio:engine-entry';
const FROM_ENGINE = 'crawl-studio-from-engine';
const BY_KEY = 'crawl-studio-engine-module:';

function keyOf(cwd, { path, namespace }) {
  return namespace === 'file' ? relative(cwd, path).split(sep).join('/') : `${namespace}:${path}`;
}

/** A module's name in the bundles: its key, a package's from its node_modules folder on (not the builder's layout). */
function nameOf(key) {
  return key.replace(/^.*\/node_modules\//, 'node_modules/');
}

/** Keys of the modules reachable from `from` in a metafile's import graph, without entering `stopAt`. */
function reachable(inputs, from, stopAt = new Set()) {
  const seen = new Set([from]);
  const todo = [from];
  while (todo.length > 0) {
    for (const imp of inputs[todo.pop()]?.imports ?? []) {
      if (imp.external || seen.has(imp.path) || stopAt.has(imp.path)) continue;
      seen.add(imp.path);
      todo.push(imp.path);
    }
  }
  return seen;
}

/**
 * Step 1's esbuild options: both entry points (`extension`, `worker`: their files) with the bundles' `options`, into a
 * metafile, nothing written.
 */
export function engineGraphOptions(options, { extension, worker }) {
  return {
    ...options,
    entryPoints: { 'graph-extension': extension, 'graph-worker': worker },
    outdir: 'out/engine-graph',
    write: false,
    metafile: true,
    minify: false,
    sourcemap: false,
  };
}

/**
 * Step 1's result from its metafile: the engine's modules (`shared`), those the extension takes from it
 * (`exported`; `esm`: those of them that are ES modules), and the worker's entry.
 */
export function planFrom(metafile, cwd, { extension, worker }) {
  const key = (file) => keyOf(cwd, { path: resolve(cwd, file), namespace: 'file' });
  const shared = reachable(metafile.inputs, key(worker));
  const exported = new Set();
  for (const own of reachable(metafile.inputs, key(extension), shared)) {
    for (const imp of metafile.inputs[own].imports) {
      if (shared.has(imp.path)) exported.add(imp.path);
    }
  }
  const names = new Map();
  for (const k of exported) {
    if (names.has(nameOf(k)))
      throw new Error(
        `two modules the extension takes from the engine are both named ${nameOf(k)}: ${names.get(nameOf(k))}, ${k}`,
      );
    names.set(nameOf(k), k);
  }
  const esm = new Set([...exported].filter((k) => metafile.inputs[k].format === 'esm'));
  return { cwd, shared, exported, esm, worker: key(worker) };
}

/** Step 2: the extension's plugin. An import that resolves into the engine is taken from the worker bundle. */
export function fromEngine(plan) {
  return {
    name: 'from-engine',
    setup(build) {
      build.onResolve({ filter: /.*/, namespace: FROM_ENGINE }, (args) => ({ path: args.path, external: true }));
      build.onResolve({ filter: /.*/ }, async (args) => {
        if (args.kind === 'entry-point' || args.pluginData?.fromEngine) return undefined;
        const r = await build.resolve(args.path, {
          kind: args.kind,
          importer: args.importer,
          namespace: args.namespace,
          resolveDir: args.resolveDir,
          pluginData: { fromEngine: true },
        });
        if (r.errors.length > 0 || r.external) return undefined;
        const key = keyOf(plan.cwd, r);
        if (!plan.shared.has(key)) return undefined;
        if (!plan.exported.has(key)) {
          return {
            errors: [
              {
                text: `${args.importer} imports ${key}, which the engine does not export: the graph changed between the build's steps (scripts/shared-engine.mjs)`,
              },
            ],
          };
        }
        return { path: nameOf(key), namespace: FROM_ENGINE };
      });
      build.onLoad({ filter: /.*/, namespace: FROM_ENGINE }, (args) => ({
        contents: `module.exports = require(${JSON.stringify(ENGINE_FILE)}).engineModule(${JSON.stringify(args.path)});`,
        loader: 'js',
      }));
    },
  };
}

/**
 * Step 3: the worker bundle's entry, `engineEntry(plan).entry` as its entry point, with the plugin in its plugins.
 * ES modules are imported, so the worker's code stays hoisted as esbuild bundles it alone, and handed out as
 * CommonJS sees them (`__esModule`: a default export stays one); CommonJS modules are required when the extension
 * first asks for them, as they were when it bundled them. Requiring the ES modules too would evaluate only what the
 * extension uses, but wraps each module of the worker in a lazy initialiser: measured, +20 ms of CPU at every
 * worker's start, against +10 ms once at the extension's activation for evaluating them all. The worker's entry
 * runs a worker only in the process whose main module the bundle is (src/worker/entry.ts).
 */
export function engineEntry(plan) {
  const spec = (key) => JSON.stringify(BY_KEY + key);
  const imports = [];
  const table = [];
  for (const key of plan.exported) {
    const name = JSON.stringify(nameOf(key));
    if (plan.esm.has(key)) {
      imports.push(`import * as m${imports.length} from ${spec(key)};`);
      table.push(`  ${name}: () => esm(m${imports.length - 1}),`);
    } else {
      table.push(`  ${name}: () => require(${spec(key)}),`);
    }
  }
  const contents = [
    ...imports,
    `import ${spec(plan.worker)};`,
    `const esm = (ns) => (ns.__esModule ? ns : Object.defineProperty(ns, '__esModule', { value: true }));`,
    `const modules = {`,
    ...table,
    `};`,
    `export function engineModule(name) {`,
    `  const get = modules[name];`,
    `  if (!get) throw new Error('the worker bundle holds no module ' + name + ': extension.js and worker.bundle.js are of different builds');`,
    `  return get();`,
    `}`,
  ].join('\n');
  return {
    entry: ENTRY,
    plugin: {
      name: 'engine-entry',
      setup(build) {
        build.onResolve({ filter: new RegExp(`^${ENTRY}$`) }, () => ({ path: ENTRY, namespace: 'engine-entry' }));
        build.onLoad({ filter: /.*/, namespace: 'engine-entry' }, () => ({
          contents,
          loader: 'js',
          resolveDir: plan.cwd,
        }));
        // A module by its key: a file by its path, a plugin's module in its namespace.
        build.onResolve({ filter: new RegExp(`^${BY_KEY}`) }, (args) => {
          const key = args.path.slice(BY_KEY.length);
          const ns = /^([\w-]+):(.*)$/.exec(key);
          if (ns && ns[1] !== 'file' && !/^[A-Za-z]$/.test(ns[1])) return { path: ns[2], namespace: ns[1] };
          return { path: resolve(plan.cwd, key) };
        });
      },
    },
  };
}
