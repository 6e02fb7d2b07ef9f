// Builds the benchmark's TypeScript into bench/.build with the repository's own esbuild.
//  - cli.js + worker.js + analysis.js: Crawl Studio's CLI, worker and its analysis thread, bundled from the
//    current src/ exactly like esbuild.mjs does (so the benchmark measures the working tree, and never races a
//    concurrent `npm run build` on dist/).
//  - the bench programs in bench/src (site generator, no-queue limit, micro-benchmarks).
// Bare imports from bench/src resolve as if from the repository's src/, so the limit and the micro-benchmarks
// use the very cheerio, ioredis and pg that the product bundles (bench/node_modules holds
// crawlee's older cheerio, which must not leak in).
import * as esbuild from 'esbuild';
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
// --src DIR / --out DIR: build Crawl Studio from another copy of the repository (an experiment's scratch copy)
// into another folder; run.mjs --build DIR then measures that build. Defaults: this repository, bench/.build.
const arg = (name) => (process.argv.includes(name) ? resolve(process.argv[process.argv.indexOf(name) + 1]) : null);
const root = arg('--src') ?? resolve(here, '..');
// The copy's own bundle options and program stubs: a change to how programs start (their stubs, flags, loader) is
// part of what an experiment measures, and a stub must match the loader it calls.
const { nodeBundleOptions, programBundleEntries, writeProgramStubs } = await import(
  pathToFileURL(join(root, 'scripts', 'bundle-options.mjs')).href
);
const out = arg('--out') ?? join(here, '.build');
mkdirSync(out, { recursive: true });
// bench/package.json says "type": "module"; the bundles are CommonJS, like dist/.
writeFileSync(join(out, 'package.json'), '{ "type": "commonjs" }\n');

// --no-minify: readable function names in profiles; otherwise minified, like the packages users install.
const minify = !process.argv.includes('--no-minify');
const common = {
  // The product's bundle options (scripts/bundle-options.mjs), with source maps for the profiles.
  ...nodeBundleOptions,
  sourcemap: 'linked',
  absWorkingDir: root,
  nodePaths: [join(resolve(here, '..'), 'node_modules')],
};

const fromRootSrc = {
  name: 'resolve-from-root-src',
  setup(build) {
    // `../../src/...` from bench/src means the chosen root's src/ (the repository, or an experiment's copy).
    build.onResolve({ filter: /^\.\.\/\.\.\/src\// }, async (args) => {
      if (!args.importer.startsWith(join(here, 'src')) || args.pluginData === 'again') return undefined;
      const r = await build.resolve(`./${args.path.slice('../../'.length)}`, {
        kind: args.kind,
        resolveDir: root,
        pluginData: 'again',
      });
      return r.errors.length ? undefined : { path: r.path };
    });
    build.onResolve({ filter: /^[^./]/ }, async (args) => {
      if (!args.importer.startsWith(join(here, 'src'))) return undefined;
      if (args.pluginData === 'again') return undefined;
      const r = await build.resolve(args.path, { kind: args.kind, resolveDir: join(root, 'src'), pluginData: 'again' });
      return r.errors.length ? undefined : { path: r.path, external: r.external };
    });
  },
};

const benchEntries = Object.fromEntries(
  readdirSync(join(here, 'src'))
    .filter((f) => f.endsWith('.ts'))
    .map((f) => [f.replace(/\.ts$/, ''), join(here, 'src', f)]),
);

await Promise.all([
  // Crawl Studio's programs are built as esbuild.mjs --production builds them (minified), so start-up is measured
  // on the code users run; the bench programs stay readable.
  esbuild.build({ ...common, minify, entryPoints: programBundleEntries, outdir: out }),
  esbuild.build({ ...common, entryPoints: benchEntries, outdir: out, plugins: [...common.plugins, fromRootSrc] }),
]);
writeProgramStubs(out);
let describe = 'unknown';
try {
  const { execFileSync } = await import('node:child_process');
  const head = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: root, stdio: ['ignore', 'pipe', 'ignore'] })
    .toString()
    .trim();
  const dirty = execFileSync('git', ['status', '--porcelain', '--', 'src'], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'ignore'],
  })
    .toString()
    .trim();
  describe = `${head}${dirty ? ' + uncommitted changes in src/' : ''}`;
} catch {
  // not a git checkout (an experiment's copy)
}
writeFileSync(join(out, 'SOURCE'), JSON.stringify({ root, describe, builtAt: new Date().toISOString() }) + '\n');
console.log(
  `bench: built ${Object.keys(benchEntries).length + Object.keys(programBundleEntries).length} bundles into ${out}`,
);
