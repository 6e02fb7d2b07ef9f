// One build for every entry point: the extension, the worker process, the CLI, and the tests.
// Everything is bundled so the .vsix needs no node_modules; `vscode` is provided by the host.
import * as esbuild from 'esbuild';
import { readdirSync, statSync, mkdirSync, copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { nodeBundleOptions, programBundleEntries, writeProgramStubs } from './scripts/bundle-options.mjs';

const production = process.argv.includes('--production');
const watch = process.argv.includes('--watch');
const onlyTests = process.argv.includes('--tests');
// Packages are built into a staging folder so the development build in dist/ (used by the tests) stays as is.
const outRoot = process.argv.find((a) => a.startsWith('--outdir='))?.slice('--outdir='.length) ?? 'dist';

const common = {
  ...nodeBundleOptions,
  sourcemap: production ? false : 'linked',
  minify: production,
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
if (!onlyTests) {
  builds.push({
    ...common,
    entryPoints: {
      extension: 'src/extension/extension.ts',
      ...programBundleEntries,
      // The npm package's library (`import { runCrawl } from 'crawl-studio'`): a plain module, no code-cache stub.
      index: 'src/api/index.ts',
    },
    outdir: outRoot,
  });
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
if (testEntries.length > 0) builds.push({
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
  for (const f of ['codicon.css', 'codicon.ttf']) copyFileSync(`node_modules/@vscode/codicons/dist/${f}`, `${outRoot}/media/codicons/${f}`);
  for (const f of ['package.json', 'browsers.json', 'LICENSE', 'NOTICE']) copyFileSync(`node_modules/playwright-core/${f}`, `${outRoot}/playwright-core/${f}`);
}

if (watch) {
  for (const b of builds) (await esbuild.context(b)).watch();
} else {
  await Promise.all(builds.map((b) => esbuild.build(b)));
  if (!onlyTests) copyAssets();
}
if (!onlyTests) {
  mkdirSync(outRoot, { recursive: true });
  writeProgramStubs(outRoot);
}
