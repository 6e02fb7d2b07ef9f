#!/usr/bin/env node
// The whole test suite, in stages: build, typecheck, unit + integration + store tests (mocha, real Redis,
// PostgreSQL and HTTP), fuzzers (fixed seed, bounded), fault injection (real processes; prints a table),
// extension-host tests in a real VS Code, UI tests in Chromium. Ends with one closing line
// "tests: N passed, N failed" and a non-zero exit when any stage failed.
//
//   npm test                      everything (after scripts/setup.sh test)
//   node scripts/test.mjs mocha   only the named stages (build, typecheck, mocha, fuzz, faults, faults-cluster, extension, ui)
import './node22-guard.mjs';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const all = ['build', 'typecheck', 'mocha', 'fuzz', 'faults', 'faults-cluster', 'extension', 'ui'];
const wanted = process.argv.slice(2).length ? process.argv.slice(2) : all;
const totals = { passed: 0, failed: 0, skipped: 0 };
const failedStages = [];
// Named again at the very end, after every stage: { stage, title, file, error }.
const failedTests = [];
const skippedTests = [];
const statsDir = mkdtempSync(join(tmpdir(), 'cs-test-stats-'));
// Tests that import BullMQ from node_modules (not through a bundle) would load msgpackr's native accelerator,
// which the product's bundles never do (scripts/bundle-options.mjs): run them on the same pure-JS path.
process.env.MSGPACKR_NATIVE_ACCELERATION_DISABLED = 'true';

function run(cmd, args, { env = {}, capture = false } = {}) {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { stdio: ['ignore', capture ? 'pipe' : 'inherit', capture ? 'pipe' : 'inherit'], env: { ...process.env, ...env } });
    let out = '';
    if (capture) {
      child.stdout.on('data', (b) => (process.stdout.write(b), (out += b)));
      child.stderr.on('data', (b) => (process.stderr.write(b), (out += b)));
    }
    child.on('exit', (code, signal) => resolve({ code: code ?? (signal ? 1 : 0), out }));
  });
}

async function mocha(name, args) {
  const stats = join(statsDir, `${name}.json`);
  const r = await run('npx', ['mocha', '--reporter', 'scripts/mocha-stats-reporter.cjs', ...args], { env: { CS_TEST_STATS: stats } });
  if (existsSync(stats)) {
    const s = JSON.parse(readFileSync(stats, 'utf8'));
    totals.passed += s.passed;
    totals.failed += s.failed;
    totals.skipped += s.skipped;
    for (const f of s.failures ?? []) failedTests.push({ stage: name, ...f });
    for (const k of s.skips ?? []) skippedTests.push({ stage: name, ...k });
    if (s.passed === 0 && s.failed === 0) return 1; // a stage that ran no test is a failure
  } else if (r.code !== 0) {
    totals.failed += 1;
  }
  return r.code;
}

const stages = {
  build: async () => (await run('node', ['esbuild.mjs'])).code,
  typecheck: async () => (await run('npx', ['tsc', '-p', '.', '--noEmit'])).code,
  mocha: () => mocha('mocha', []),
  // Fixed seed and bounded cases: the same inputs every run (test/fuzz/fuzz.test.ts says how to fuzz longer).
  fuzz: () => mocha('fuzz', ['--no-config', '--timeout', '600000', '--exit', '--enable-source-maps', 'out/test/fuzz/**/*.test.js']),
  // About 4-5 minutes (CS_FAULTS_SOAK=1 for the long soak); the table is also in test-artifacts/faults-table.md.
  faults: () => mocha('faults', ['--no-config', '--timeout', '900000', '--exit', '--enable-source-maps', 'out/test/faults/**/*.test.js']),
  // The same scenarios on a real 3-primary Redis Cluster (issue 19; test/faults/redis.ts), about as long again.
  'faults-cluster': () => {
    process.env.CS_FAULTS_REDIS = 'cluster';
    return mocha('faults-cluster', ['--no-config', '--timeout', '900000', '--exit', '--enable-source-maps', 'out/test/faults/**/*.test.js']).finally(() => delete process.env.CS_FAULTS_REDIS);
  },
  extension: async () => {
    const r = await run('node', ['scripts/code-server/run-extension-tests.mjs'], { capture: true });
    // One closing line per suite (the main one and the untrusted-workspace one).
    const ms = [...r.out.matchAll(/extension: (\d+) passed, (\d+) failed/g)];
    for (const m of ms) {
      totals.passed += Number(m[1]);
      totals.failed += Number(m[2]);
    }
    // The extension-host runner prints "extension FAILED: <title>: <message>" per failed test.
    for (const m of r.out.matchAll(/^extension FAILED: (.*)$/gm)) failedTests.push({ stage: 'extension', title: m[1], file: '', error: '' });
    if (ms.length < 2 && r.code !== 0) {
      totals.failed += 1;
    }
    return r.code;
  },
  ui: async () => {
    const dir = 'out/test/ui';
    const files = existsSync(dir) ? readdirSync(dir, { recursive: true }).filter((f) => String(f).endsWith('.test.js')).map((f) => join(dir, String(f))) : [];
    if (files.length === 0) return 0;
    return mocha('ui', ['--no-config', '--timeout', '180000', '--exit', ...files]);
  },
};

for (const name of wanted) {
  if (!stages[name]) {
    console.error(`unknown stage '${name}' (stages: ${all.join(', ')})`);
    process.exit(2);
  }
  const started = Date.now();
  console.log(`\n=== ${name}`);
  const code = await stages[name]();
  console.log(`=== ${name}: ${code === 0 ? 'ok' : `FAILED (exit ${code})`} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  if (code !== 0) failedStages.push(name);
  // Nothing after a broken build or typecheck can be trusted.
  if (code !== 0 && (name === 'build' || name === 'typecheck')) break;
}

if (skippedTests.length) {
  console.log(`\nSkipped tests (${skippedTests.length}):`);
  for (const t of skippedTests) console.log(`  [${t.stage}] ${t.title}\n      ${t.reason ?? 'no reason given'}`);
}
if (failedTests.length) {
  console.log(`\nFailed tests (${failedTests.length}):`);
  for (const t of failedTests) console.log(`  [${t.stage}] ${t.title}${t.file ? ` (${t.file.replace(process.cwd() + '/', '')})` : ''}\n      ${t.error}`);
}
if (failedStages.length) console.log(`\nFailed stages: ${failedStages.join(', ')}`);
console.log(`\ntests: ${totals.passed} passed, ${totals.failed} failed${totals.skipped ? `, ${totals.skipped} skipped` : ''}`);
process.exit(failedStages.length ? 1 : 0);
