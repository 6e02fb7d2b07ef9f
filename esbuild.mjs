// One build for every entry point: the extension, the worker process, the CLI, and the tests.
// Everything is bundled so the .vsix needs no node_modules; `vscode` is provided by the host.
import * as esbuild from 'esbuild';
import { readdirSync, statSync, mkdirSync, copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { nodeBundleOptions, programBundleEntries, writeProgramStubs } from './scripts/bundle-options.mjs';
import { engineEntry, engineGraphOptions, fromEngine, planFrom } from './scripts/shared-engine.mjs';

const production = process.argv.includes('--production');
const watch = process.argv.includes('--watch');
const onlyTests = process.argv.includes('--tests');
// Packages are built into a staging folder so the development build in dist/ (used by the tests) stays as is.
const outRoot = process.argv.find((a) => a.startsWith('--outdir='))?.slice('--outdir='.length) ?? 'dist';

const common = {
  ...nodeBundleOptions,
  sourcemap: production ? false : 'linked',
  minify: production,
  // A packaged worker's stack traces (Show Job Data, crash reports) name their functions (issue 32, item 7): the
  // .vsix ships no source maps, and minified names read `at e (worker.js:1:52311)`.
  keepNames: production,
};

function walk(dir, pred) {
  const out = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...walk(p, pred));
    else if (pred(p)) out.push(p);
  }
  return out;
}

const builds = [];
// The extension and the worker share one copy of the engine, in the worker's bundle (scripts/shared-engine.mjs):
// the graph of both is read first, then the two are built from it.
const engineEntries = { extension: 'src/extension/extension.ts', worker: programBundleEntries['worker.bundle'] };
const otherPrograms = Object.fromEntries(
  Object.entries(programBundleEntries).filter(([name]) => name !== 'worker.bundle'),
);
if (!onlyTests) {
  builds.push({
    ...common,
    entryPoints: {
      ...otherPrograms,
      // The npm package's library (`import { runCrawl } from 'crawl-studio'`): a plain module, no code-cache stub.
      index: 'src/api/index.ts',
    },
    outdir: outRoot,
  });
}

/** The extension's bundle and the worker's (the engine), from the graph of both (`metafile`). */
async function buildExtensionAndEngine(metafile) {
  const plan = planFrom(metafile, process.cwd(), engineEntries);
  const engine = engineEntry(plan);
  await Promise.all([
    esbuild.build({
      ...common,
      entryPoints: { extension: engineEntries.extension },
      outdir: outRoot,
      plugins: [fromEngine(plan), ...common.plugins],
    }),
    esbuild.build({
      ...common,
      entryPoints: { 'worker.bundle': engine.entry },
      outdir: outRoot,
      plugins: [engine.plugin, ...common.plugins],
    }),
  ]);
}

// Webview scripts: every media/<view>/main.ts becomes dist/media/<view>/main.js for the browser sandbox of a
// webview (no Node, no remote code: everything they run is in the bundle).
if (!onlyTests) {
  const webviews = walk('media', (p) => /\/main\.ts$/.test(p));
  if (webviews.length > 0) {
    builds.push({
      bundle: true,
      platform: 'browser',
      format: 'iife',
      target: 'es2022',
      sourcemap: production ? false : 'linked',
      minify: production,
      entryPoints: webviews,
      outbase: 'media',
      outdir: `${outRoot}/media`,
      loader: { '.css': 'text' },
      logLevel: 'warning',
    });
  }
}

// playwright-core as a bundle of its own, loaded by workers with browser rules only (src/worker/browser/load.ts).
// It finds its package.json one folder above its code, so the layout is kept: playwright-core/{package.json,lib/}.
if (!onlyTests) {
  builds.push({
    bundle: true,
    platform: 'node',
    target: 'node22',
    format: 'cjs',
    minify: true,
    entryPoints: { index: 'node_modules/playwright-core/index.js' },
    outdir: `${outRoot}/playwright-core/lib`,
    logLevel: 'warning',
  });
}

const testEntries = production ? [] : walk('test', (p) => p.endsWith('.test.ts') || p.endsWith('/index.ts'));
if (testEntries.length > 0)
  builds.push({
    ...common,
    sourcemap: 'inline',
    entryPoints: testEntries,
    outbase: 'test',
    outdir: 'out/test',
    // Tests import the real libraries from node_modules, like the product does after bundling.
    packages: 'external',
    external: [...common.external],
  });

function copyAssets() {
  mkdirSync(`${outRoot}/schema`, { recursive: true });
  copyFileSync('src/core/task/crawl-task.schema.json', `${outRoot}/schema/crawl-task.schema.json`);
  // The codicon font for webviews, served from the extension's own files (no CDN).
  mkdirSync(`${outRoot}/media/codicons`, { recursive: true });
  for (const f of ['codicon.css', 'codicon.ttf'])
    copyFileSync(`node_modules/@vscode/codicons/dist/${f}`, `${outRoot}/media/codicons/${f}`);
  for (const f of ['package.json', 'browsers.json', 'LICENSE', 'NOTICE'])
    copyFileSync(`node_modules/playwright-core/${f}`, `${outRoot}/playwright-core/${f}`);
}

const graph = engineGraphOptions(common, engineEntries);
if (watch) {
  for (const b of builds) (await esbuild.context(b)).watch();
  // The graph's build watches the files of both; each rebuild of it builds the pair again.
  // (esbuild has printed a failed build's errors: watching goes on.)
  const again = {
    name: 'extension-and-engine',
    setup: (b) =>
      b.onEnd((r) => (r.errors.length === 0 ? buildExtensionAndEngine(r.metafile).catch(() => {}) : undefined)),
  };
  if (!onlyTests) (await esbuild.context({ ...graph, plugins: [...graph.plugins, again] })).watch();
} else {
  const pair = onlyTests ? null : esbuild.build(graph).then((r) => buildExtensionAndEngine(r.metafile));
  await Promise.all([...builds.map((b) => esbuild.build(b)), pair]);
  if (!onlyTests) copyAssets();
}
if (!onlyTests) {
  mkdirSync(outRoot, { recursive: true });
  writeProgramStubs(outRoot);
}
