import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import {
  appendFileSync,
  chownSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { skipBecause } from '../support/skip';

// dist/boot.js runs a program's bundle from V8's code cache (src/worker/codeCache.ts). Each case starts a real
// Node process through a stub like the build's, and the stub prints what the cache did.

const BOOT = resolve('dist/boot.js');

describe('code cache (dist/boot.js)', () => {
  let dir: string;
  let cache: string;

  before(() => {
    if (!existsSync(BOOT)) throw new Error('build first (node esbuild.mjs): dist/boot.js is missing');
  });
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'cs-codecache-'));
    cache = join(dir, 'cache');
    writeFileSync(
      join(dir, 'prog.bundle.js'),
      '#!/usr/bin/env node\n' +
        "const helper = require('./helper.js');\n" +
        'console.log(JSON.stringify({ main: require.main === module, dir: __dirname, file: __filename, helper: helper(), resolves: typeof require.resolve, args: process.argv.slice(2) }));\n',
    );
    writeFileSync(join(dir, 'helper.js'), 'module.exports = () => "helped";\n');
    writeFileSync(
      join(dir, 'prog.js'),
      `process.stderr.write(require(${JSON.stringify(BOOT)}).runCached(require('node:path').join(__dirname, 'prog.bundle.js'), module));\n`,
    );
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  /** A stub like prog.js that starts the program under V8 flags of its own. */
  const withFlags = (name: string, flags: string[]) =>
    writeFileSync(
      join(dir, `${name}.js`),
      `process.stderr.write(require(${JSON.stringify(BOOT)}).runCached(require('node:path').join(__dirname, 'prog.bundle.js'), module, ${JSON.stringify(flags)}));\n`,
    );

  /** Starts prog.js (or another stub); what the cache did (the stub's stderr) and what the program printed. */
  const start = (setting = cache, stub = 'prog') => {
    const r = spawnSync(process.execPath, [join(dir, `${stub}.js`), 'a', 'b'], {
      env: { ...process.env, CRAWL_STUDIO_CODE_CACHE: setting },
      encoding: 'utf8',
    });
    assert.equal(r.status, 0, r.stderr);
    return { outcome: r.stderr, stdout: r.stdout };
  };
  const startJson = () => {
    const r = start();
    return { outcome: r.outcome, result: JSON.parse(r.stdout) as Record<string, unknown> };
  };

  it('runs the bundle as the entry module, then from the cache it wrote', () => {
    const first = startJson();
    assert.equal(first.outcome, 'made');
    assert.deepEqual(first.result, {
      main: true,
      dir,
      file: join(dir, 'prog.bundle.js'),
      helper: 'helped',
      resolves: 'function',
      args: ['a', 'b'],
    });
    assert.equal(readdirSync(cache).filter((f) => f.endsWith('.v8')).length, 1);
    const second = startJson();
    assert.equal(second.outcome, 'used');
    assert.deepEqual(second.result, first.result);
  });

  it('compiles a changed bundle afresh instead of running the old code', () => {
    startJson();
    appendFileSync(join(dir, 'prog.bundle.js'), 'console.log(JSON.stringify({ changed: true }));\n');
    const r = start();
    assert.equal(r.outcome, 'made');
    assert.match(r.stdout, /"changed":true/);
    // The old build's cache is gone, the new one's written.
    assert.equal(readdirSync(cache).filter((f) => f.endsWith('.v8')).length, 1);
    assert.equal(start().outcome, 'used');
  });

  it('ignores a damaged cache file and replaces it', () => {
    startJson();
    const [file] = readdirSync(cache).filter((f) => f.endsWith('.v8'));
    writeFileSync(join(cache, file!), Buffer.alloc(4096, 7));
    assert.equal(startJson().outcome, 'rejected');
    assert.equal(startJson().outcome, 'used');
  });

  it('writes nothing when caching is off', () => {
    const r = start('off');
    assert.equal(r.outcome, 'off');
    assert.match(r.stdout, /"helper":"helped"/);
    assert.equal(existsSync(cache), false);
  });

  it("sets a program's V8 flags before reading its cache, and keeps a cache per set of flags", () => {
    withFlags('liftoff', ['--liftoff-only']);
    // A flag that changes code generation makes V8 reject a cache made without it: set by the program itself, after
    // the cache was read, it made every start a miss.
    assert.equal(start(cache, 'liftoff').outcome, 'made');
    assert.equal(start(cache, 'liftoff').outcome, 'used');
    // The same program without the flag has its own cache, and neither start replaces the other's.
    assert.equal(start().outcome, 'made');
    assert.equal(readdirSync(cache).filter((f) => f.endsWith('.v8')).length, 2);
    assert.equal(start(cache, 'liftoff').outcome, 'used');
    assert.equal(start().outcome, 'used');
  });

  it('starts the built CLI from its cache on the second start, for its own commands and for `worker`', () => {
    const cli = resolve('dist/cli.js');
    const run = (...args: string[]) =>
      spawnSync(process.execPath, [cli, ...args], {
        env: { ...process.env, CRAWL_STUDIO_CODE_CACHE: cache },
        encoding: 'utf8',
      });
    const files = () =>
      new Map(
        readdirSync(cache)
          .filter((f) => f.endsWith('.v8'))
          .map((f) => [f, `${statSync(join(cache, f)).ino}:${statSync(join(cache, f)).mtimeMs}`]),
      );
    assert.equal(run('validate', resolve('examples/books.crawl.yaml')).status, 0);
    assert.equal(run('worker').status, 2); // its usage error (exit 2): the bundle ran, under the worker's flags
    const made = files();
    assert.equal(made.size, 2, `one cache for the CLI's commands, one for worker: ${[...made.keys()].join(', ')}`);
    // A cache that was used is not written again; a rejected one would be replaced (a new file by rename).
    assert.equal(run('validate', resolve('examples/books.crawl.yaml')).status, 0);
    assert.equal(run('worker').status, 2);
    assert.deepEqual(files(), made);
  });

  it("never runs a cache file owned by another user (V8's data is code)", function () {
    // Only root can give a file to another user. CI runs as root, so there this check always runs.
    if (process.getuid?.() !== 0) skipBecause(this, 'only root can give a file to another user (CI runs as root)');
    startJson();
    const [file] = readdirSync(cache).filter((f) => f.endsWith('.v8'));
    chownSync(join(cache, file!), 1, 1);
    assert.equal(startJson().outcome, 'made');
  });
});
