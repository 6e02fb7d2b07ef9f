// The esbuild options of every Node bundle of the product (extension, worker, analysis thread, CLI). esbuild.mjs
// builds dist/ and the packages with them, bench/build.mjs its own copy of the CLI and worker: one definition, so
// the benchmark measures what ships.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { taskValidatorPlugin } from './esbuild-task-validator.mjs';

/**
 * Native add-ons that dependencies load when they can and do without otherwise: msgpackr's accelerator (BullMQ
 * packs job options with msgpackr) and pg's native binding.
 */
const NATIVE_OPTIONAL = ['msgpackr-extract', 'pg-native'];

/**
 * Bundles each of `names` as a module that throws, so the dependency takes its pure-JS path wherever the bundle
 * runs. Left external, the require resolved to whatever node_modules lies above the bundle: in this repository
 * (tests, the bench, the demo) msgpackr loaded its .node file into the CLI and the workers (the extension's bundle
 * holds the same require), against the rule that nothing they load is native (VS Code's Electron Node on every
 * OS), and tests and the bench ran a path that does not ship.
 */
function noNativeModulesPlugin(names) {
  const filter = new RegExp(`^(?:${names.map((n) => n.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|')})$`);
  return {
    name: 'no-native-modules',
    setup(build) {
      build.onResolve({ filter }, (args) => ({ path: args.path, namespace: 'no-native-module' }));
      build.onLoad({ filter: /.*/, namespace: 'no-native-module' }, (args) => ({
        contents: `throw new Error(${JSON.stringify(`${args.path} is a native module: Crawl Studio's bundles load none`)});`,
        loader: 'js',
      }));
    },
  };
}

/**
 * BullMQ's PostgreSQL backend as a module that exports nothing. BullMQ's index re-exports it (`export * from
 * './postgres'`), and its SQL, inlined as strings, has top-level code esbuild cannot drop: 290 KB in every bundle
 * that imports BullMQ (issue 34: the .vsix held it twice). Crawl Studio's queues are Redis; nothing here
 * imports the Postgres backend, and BullMQ reaches it only through that re-export.
 */
function withoutBullmqPostgresPlugin() {
  return {
    name: 'without-bullmq-postgres',
    setup(build) {
      build.onLoad({ filter: /[\\/]bullmq[\\/]dist[\\/](?:esm|cjs)[\\/]postgres[\\/]index\.js$/ }, () => ({
        contents: 'export {};',
        loader: 'js',
      }));
    },
  };
}

/**
 * ioredis's Commander.js with its prototype in dictionary mode while it adds a method per Redis command. It adds
 * ~570 methods (each command and its Buffer variant) to a class's prototype one by one, and V8 gives each addition
 * to a fast-mode prototype a new map with a copy of all the properties before it: 30 ms of every process start that
 * loads ioredis, with V8's code cache (the CLI, a worker, the extension host; measured on Node 22.23, 0.6 ms in
 * dictionary mode). A property added and deleted first puts the prototype in dictionary mode; V8 makes it fast again
 * when it is first used as a prototype. The build fails if ioredis's loop is no longer there to patch.
 */
function ioredisFastCommanderPlugin() {
  const loop = 'commands.forEach(function (commandName) {';
  return {
    name: 'ioredis-fast-commander',
    setup(build) {
      build.onLoad({ filter: /[\\/]ioredis[\\/]built[\\/]utils[\\/]Commander\.js$/ }, (args) => {
        const source = readFileSync(args.path, 'utf8');
        if (!source.includes(loop)) throw new Error(`${args.path}: no '${loop}' to patch (scripts/bundle-options.mjs)`);
        const dictionaryMode =
          'Commander.prototype.__crawlStudioDictionaryMode = 0;\ndelete Commander.prototype.__crawlStudioDictionaryMode;\n';
        return { contents: source.replace(loop, `${dictionaryMode}${loop}`), loader: 'js' };
      });
    },
  };
}

export const nodeBundleOptions = {
  bundle: true,
  platform: 'node',
  target: 'node22',
  format: 'cjs',
  // A package's ES module build when it has one (today that changes only BullMQ, the one dependency with a
  // "module" field and no "exports" map): esbuild hoists and tree-shakes ES modules, where CommonJS stays wrapped
  // and reaches every export through `exports`. BullMQ's: 470 KB less in the worker bundle and ~10% less CPU per
  // crawled page (bench, interleaved A/B).
  mainFields: ['module', 'main'],
  loader: { '.lua': 'text', '.yaml': 'text' },
  // playwright-core is not bundled in: a worker loads it only for a task with browser rules (worker/browser/load.ts),
  // from its own bundle next to the others (esbuild.mjs), so workers without browsers never parse its 4 MB.
  external: ['vscode', 'playwright-core'],
  logLevel: 'warning',
  // parse.ts imports the task-file validator pre-compiled from the schema (no ajv.compile at start-up).
  plugins: [
    taskValidatorPlugin(),
    noNativeModulesPlugin(NATIVE_OPTIONAL),
    withoutBullmqPostgresPlugin(),
    ioredisFastCommanderPlugin(),
  ],
};

/**
 * The product's Node programs. Each is built as dist/<name>.bundle.js and started through dist/<name>.js, a stub that
 * runs the bundle from V8's code cache (dist/boot.js, src/worker/codeCache.ts): compiling the multi-megabyte bundles
 * anew was a third of a process's start-up. The worker's page-analysis thread has its own small bundle, so a thread
 * boots without BullMQ and ioredis.
 */
const programEntries = {
  cli: 'src/cli/main.ts',
  worker: 'src/worker/entry.ts',
  analysis: 'src/worker/analysisEntry.ts',
};

/**
 * V8 flags of a program, as a JavaScript expression its stub evaluates: they must be set before the stub reads the
 * code cache (V8 rejects a cache made under other flags; see runCached), so the program cannot set them itself.
 *
 * The CLI keeps WebAssembly on V8's baseline compiler (Liftoff), except as `crawl-studio worker`. Its one wasm
 * module is SQLite, the embedded store: V8 tiers its hot functions up to TurboFan in the background, and
 * recompiling SQLite's large functions took 0.45-0.6 s of CPU in a 2,202-page crawl (perf, every thread of the CLI),
 * more than the writer's own work, on a machine whose cores the workers need. Baseline code writes batches as fast
 * (bench micro-store, within its noise), so that compile is saved outright. Workers keep tiering: their wasm is
 * undici's HTTP parser, which runs hot and is faster tiered up (perf: the worker's own CPU rose more than its
 * compile fell).
 */
const programV8Flags = {
  cli: "process.argv[2] === 'worker' ? [] : ['--liftoff-only']",
};

/** esbuild entry points of the programs' bundles and of the loader their stubs call. */
export const programBundleEntries = {
  ...Object.fromEntries(Object.entries(programEntries).map(([name, src]) => [`${name}.bundle`, src])),
  boot: 'src/worker/codeCache.ts',
};

/** Writes dist/<name>.js for every program (the CLI's with a shebang: it is the npm package's `bin`). */
export function writeProgramStubs(outdir) {
  for (const name of Object.keys(programEntries)) {
    const shebang = name === 'cli' ? '#!/usr/bin/env node\n' : '';
    writeFileSync(
      join(outdir, `${name}.js`),
      `${shebang}'use strict';\n// Generated by the build (scripts/bundle-options.mjs): runs ${name}.bundle.js from V8's code cache.\n` +
        `require('./boot.js').runCached(require('node:path').join(__dirname, '${name}.bundle.js'), module${programV8Flags[name] ? `, ${programV8Flags[name]}` : ''});\n`,
    );
  }
}
