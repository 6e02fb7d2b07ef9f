import { strict as assert } from 'node:assert';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// The brief's rule for the Redis client: one copy of ioredis in every bundle, of the major BullMQ is built and
// tested against. A second copy would give BullMQ and the engine different client classes (BullMQ checks
// `instanceof`-like shapes on the connection it is handed) and twice the code to load.

const root = join(__dirname, '..', '..', '..');
const read = (p: string) => JSON.parse(readFileSync(join(root, p), 'utf8')) as Record<string, any>;
const major = (version: string) => Number(/(\d+)/.exec(version)?.[1]);

describe('dependencies', () => {
  it('installs one ioredis, of the major BullMQ is built and tested against', () => {
    const lock = read('package-lock.json');
    const copies = Object.keys(lock.packages as object).filter(
      (p) => p === 'node_modules/ioredis' || p.endsWith('/node_modules/ioredis'),
    );
    assert.deepEqual(copies, ['node_modules/ioredis'], `ioredis installed at ${copies.join(', ')}`);
    const ours = lock.packages['node_modules/ioredis'].version as string;
    const bullmq = read('node_modules/bullmq/package.json');
    const tested = (bullmq.devDependencies?.ioredis ?? bullmq.dependencies?.ioredis) as string;
    assert.ok(tested, "bullmq's package.json names no ioredis it is built against");
    assert.equal(major(ours), major(tested), `ioredis ${ours}, BullMQ built against ${tested}`);
  });

  it("bundles one ioredis into each program, the extension taking the worker's, and BullMQ without its Postgres backend", function () {
    // The development build keeps esbuild's "// node_modules/<path>" marker before every bundled module.
    const marker = /^\/\/ .*node_modules\/ioredis\/built\/Redis\.js$/gm;
    const bundles = ['dist/worker.bundle.js', 'dist/cli.bundle.js', 'dist/extension.js', 'dist/index.js'].map((b) =>
      join(root, b),
    );
    if (!bundles.every(existsSync)) throw new Error('build first (node esbuild.mjs): dist/ is missing a bundle');
    const [worker, cli, extension, library] = bundles.map((b) => readFileSync(b, 'utf8'));
    for (const [b, text] of [
      ['worker.bundle.js', worker],
      ['cli.bundle.js', cli],
      ['index.js', library],
    ] as const) {
      const markers = text!.match(marker) ?? [];
      assert.equal(markers.length, 1, `${b}: ${markers.join(', ') || 'no ioredis'}`);
    }
    // The extension host runs the worker bundle's engine (scripts/shared-engine.mjs): none of its own.
    assert.deepEqual(extension!.match(marker) ?? [], [], 'extension.js bundles no ioredis of its own');
    assert.deepEqual(
      extension!.match(/^\/\/ (?!crawl-studio-from-engine:).*node_modules\/bullmq\/.*$/gm) ?? [],
      [],
      'extension.js bundles no BullMQ of its own',
    );
    assert.match(
      extension!,
      /require\("\.\/worker\.bundle\.js"\)\.engineModule\("node_modules\/bullmq\//,
      "extension.js takes BullMQ from the worker's bundle",
    );
    // BullMQ's PostgreSQL backend (its SQL inlined, 290 KB) is left out: the queues are Redis (scripts/bundle-options.mjs).
    for (const [b, text] of [
      ['worker.bundle.js', worker],
      ['cli.bundle.js', cli],
      ['index.js', library],
    ] as const) {
      assert.doesNotMatch(
        text!,
        /^\/\/ .*node_modules\/bullmq\/dist\/esm\/postgres\/sql-scripts\.js$/m,
        `${b} bundles BullMQ's Postgres SQL`,
      );
      assert.match(text!, /^\/\/ .*node_modules\/bullmq\/dist\/esm\/classes\/queue\.js$/m, `${b} bundles BullMQ`);
    }
  });

  it('loads no native module, even with node_modules above the bundle (as in this repository)', function () {
    this.timeout(20_000);
    // msgpackr (BullMQ's) requires its native accelerator when it can: here node_modules holds one, so a bundle
    // that left the require to Node loaded a .node file. Every dlopen goes through process.dlopen.
    const dir = mkdtempSync(join(tmpdir(), 'cs-native-'));
    try {
      const hook = join(dir, 'hook.cjs');
      writeFileSync(
        hook,
        `const o = process.dlopen; process.dlopen = function (m, f, ...r) { process.stderr.write('dlopen ' + f + '\\n'); return o.call(this, m, f, ...r); };`,
      );
      const control = spawnSync(
        process.execPath,
        ['-r', hook, '-e', 'require(process.argv[1])', join(root, 'node_modules', 'msgpackr-extract')],
        { encoding: 'utf8' },
      );
      assert.match(control.stderr, /dlopen .*\.node/, `the hook sees a native module load: ${control.stderr}`);
      // Each program loads its whole bundle before it reads its arguments (the library as it is required).
      for (const program of ['dist/cli.js', 'dist/worker.js', 'dist/index.js']) {
        const r = spawnSync(process.execPath, ['-r', hook, join(root, program), '--no-such-flag'], {
          encoding: 'utf8',
          env: { ...process.env, CRAWL_STUDIO_CODE_CACHE: 'off' },
        });
        assert.doesNotMatch(r.stderr, /^dlopen /m, `${program}: ${r.stderr}`);
        assert.notEqual(r.status, null, `${program} ran to its exit`);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
