import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { appendFileSync, chownSync, existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { inCI } from '../support/services';

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
    writeFileSync(join(dir, 'prog.js'), `process.stderr.write(require(${JSON.stringify(BOOT)}).runCached(require('node:path').join(__dirname, 'prog.bundle.js'), module));\n`);
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  /** Starts prog.js; what the cache did (the stub's stderr) and what the program printed. */
  const start = (setting = cache) => {
    const r = spawnSync(process.execPath, [join(dir, 'prog.js'), 'a', 'b'], { env: { ...process.env, CRAWL_STUDIO_CODE_CACHE: setting }, encoding: 'utf8' });
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
    assert.deepEqual(first.result, { main: true, dir, file: join(dir, 'prog.bundle.js'), helper: 'helped', resolves: 'function', args: ['a', 'b'] });
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

  it("never runs a cache file owned by another user (V8's data is code)", function () {
    // Only root can give a file to another user. CI runs as root, so there this check always runs.
    if (process.getuid?.() !== 0) {
      if (inCI()) throw new Error('CI runs as root: this check cannot be skipped there');
      this.skip();
    }
    startJson();
    const [file] = readdirSync(cache).filter((f) => f.endsWith('.v8'));
    chownSync(join(cache, file!), 1, 1);
    assert.equal(startJson().outcome, 'made');
  });
});
