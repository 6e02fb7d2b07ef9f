import { strict as assert } from 'node:assert';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

// The extension host takes the engine from the worker's bundle (scripts/shared-engine.mjs): every module
// dist/extension.js asks for must be there, and requiring the bundle must not start a worker in the extension host.

const root = join(__dirname, '..', '..', '..');
const extension = join(root, 'dist', 'extension.js');
const engine = join(root, 'dist', 'worker.bundle.js');

describe('the engine shared by the extension and its workers', () => {
  before(() => {
    if (!existsSync(extension) || !existsSync(engine))
      throw new Error('build first (node esbuild.mjs): dist/ is missing a bundle');
  });

  it('answers every module extension.js takes from it, and runs no worker when required', function () {
    this.timeout(30_000);
    const names = [
      ...new Set([...readFileSync(extension, 'utf8').matchAll(/\.engineModule\("([^"]+)"\)/g)].map((m) => m[1]!)),
    ];
    assert.ok(
      names.some((n) => n.startsWith('node_modules/bullmq/')),
      `extension.js takes BullMQ from the engine: ${names.join(', ')}`,
    );
    assert.ok(
      names.some((n) => n.startsWith('src/frontier/')),
      'and the frontier',
    );
    // In a process of its own, like the extension host: a worker started there would print its usage and exit 2.
    const probe = `const e = require(process.argv[1]); const names = JSON.parse(process.argv[2]);
      const missing = names.filter((n) => typeof e.engineModule(n) !== 'object');
      const queue = typeof e.engineModule(names.find((n) => n.startsWith('node_modules/bullmq/'))).Queue;
      let unknown = ''; try { e.engineModule('src/no/such.ts'); } catch (err) { unknown = err.message; }
      console.log(JSON.stringify({ missing, queue, unknown }));`;
    const r = spawnSync(process.execPath, ['-e', probe, engine, JSON.stringify(names)], {
      encoding: 'utf8',
      env: { ...process.env, CRAWL_STUDIO_CODE_CACHE: 'off' },
    });
    assert.equal(r.status, 0, `the probe exited ${r.status}: ${r.stderr}`);
    assert.equal(r.stderr, '', 'nothing on stderr (no worker usage line)');
    const { missing, queue, unknown } = JSON.parse(r.stdout) as { missing: string[]; queue: string; unknown: string };
    assert.deepEqual(missing, [], 'every module is answered');
    assert.equal(queue, 'function', "BullMQ's Queue, as the extension imports it");
    assert.match(
      unknown,
      /holds no module src\/no\/such\.ts: extension\.js and worker\.bundle\.js are of different builds/,
    );
  });

  it('still runs a worker as a program (dist/worker.js)', function () {
    this.timeout(30_000);
    const r = spawnSync(process.execPath, [join(root, 'dist', 'worker.js'), '--no-such-flag'], {
      encoding: 'utf8',
      env: { ...process.env, CRAWL_STUDIO_CODE_CACHE: 'off' },
    });
    assert.equal(r.status, 2, `exit ${r.status}: ${r.stderr}`);
    assert.match(r.stderr, /Unknown option '--no-such-flag'/);
  });
});
