#!/usr/bin/env node
// Builds what users install, from a clean staging folder (the development build in dist/ is left alone):
//   node scripts/package.mjs vsix   -> out/package/crawl-studio-<version>.vsix   (the VS Code extension)
//   node scripts/package.mjs cli    -> out/package/crawl-studio-<version>.tgz (npm package: bin crawl-studio, and the
//                                      library `import { runCrawl, loadTask } from 'crawl-studio'` with its types)
// Both are bundled and minified: neither needs node_modules at run time.
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

const what = process.argv[2] ?? 'vsix';
const root = resolve('.');
const pkg = JSON.parse(readFileSync('package.json', 'utf8'));
const outDir = join(root, 'out', 'package');
mkdirSync(outDir, { recursive: true });

function build(stage) {
  rmSync(stage, { recursive: true, force: true });
  mkdirSync(stage, { recursive: true });
  execFileSync(process.execPath, ['esbuild.mjs', '--production', `--outdir=${join(stage, 'dist')}`], {
    stdio: 'inherit',
  });
}

if (what === 'vsix') {
  const stage = join(root, 'out', 'stage-vsix');
  build(stage);
  // The library is the npm package's; the extension never loads it.
  rmSync(join(stage, 'dist', 'index.js'), { force: true });
  for (const f of ['package.json', 'package.nls.json', 'README.md', 'CHANGELOG.md', 'LICENSE', '.vscodeignore'])
    cpSync(f, join(stage, f));
  cpSync('media', join(stage, 'media'), { recursive: true });
  const out = join(outDir, `crawl-studio-${pkg.version}.vsix`);
  execFileSync(join(root, 'node_modules', '.bin', 'vsce'), ['package', '--no-dependencies', '--out', out], {
    cwd: stage,
    stdio: 'inherit',
  });
  console.log(out);
} else if (what === 'cli') {
  const stage = join(root, 'out', 'stage-cli');
  build(stage);
  rmSync(join(stage, 'dist', 'extension.js'), { force: true });
  // The webviews' code stays out; the web monitor's page script (`crawl-studio monitor`) is the CLI's own.
  for (const view of readdirSync(join(stage, 'dist', 'media')))
    if (view !== 'monitor') rmSync(join(stage, 'dist', 'media', view), { recursive: true, force: true });
  // The library's types in one file, from src/api/index.ts: only what it exports, and no type of a dependency
  // (the package installs none), so a TypeScript program compiles against it as installed. dts-bundle-generator
  // also compiles the result, so a declaration that does not stand on its own fails the packaging.
  execFileSync(
    process.execPath,
    [
      join(root, 'node_modules', 'dts-bundle-generator', 'dist', 'bin', 'dts-bundle-generator.js'),
      '--project',
      'tsconfig.json',
      '--no-banner',
      '--silent',
      '--export-referenced-types',
      'false',
      '-o',
      join(stage, 'dist', 'index.d.ts'),
      'src/api/index.ts',
    ],
    { stdio: 'inherit' },
  );
  const cliPkg = {
    name: 'crawl-studio',
    version: pkg.version,
    description:
      'Crawl Studio headless: run web crawls and worker fleets on a Redis/BullMQ queue from the command line or from a program (runCrawl, loadTask).',
    license: pkg.license,
    repository: pkg.repository,
    homepage: pkg.homepage,
    keywords: pkg.keywords,
    bin: { 'crawl-studio': 'dist/cli.js' },
    main: 'dist/index.js',
    types: 'dist/index.d.ts',
    exports: { '.': { types: './dist/index.d.ts', default: './dist/index.js' }, './package.json': './package.json' },
    files: ['dist/', 'README.md', 'LICENSE'],
    engines: { node: pkg.engines.node },
  };
  writeFileSync(join(stage, 'package.json'), JSON.stringify(cliPkg, null, 2) + '\n');
  cpSync('LICENSE', join(stage, 'LICENSE'));
  cpSync('README.md', join(stage, 'README.md'));
  const name = execFileSync('npm', ['pack', '--pack-destination', outDir], { cwd: stage, encoding: 'utf8' })
    .trim()
    .split('\n')
    .pop();
  const out = join(outDir, name);
  if (!existsSync(out)) throw new Error(`npm pack did not produce ${out}`);
  console.log(out);
} else {
  console.error(`unknown package '${what}': vsix or cli`);
  process.exit(2);
}
