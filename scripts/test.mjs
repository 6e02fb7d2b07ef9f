#!/usr/bin/env node
// The whole test suite, in stages: build, typecheck, unit + integration + store tests (mocha, real Redis,
// PostgreSQL and HTTP), fuzzers (fixed seed, bounded), fault injection (real processes; prints a table),
// extension-host tests in a real VS Code, UI tests in Chromium. Ends with one closing line
// "tests: N passed, N failed" and a non-zero exit when any stage failed.
//
//   npm test                      everything (after scripts/setup.sh test)
//   node scripts/test.mjs mocha   only the named stages (build, typecheck, lint, mocha, fuzz, faults, faults-cluster, extension, ui)
import './node22-guard.mjs';
import { spawn } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';

const all = ['build', 'typecheck', 'lint', 'mocha', 'fuzz', 'faults', 'faults-cluster', 'extension', 'ui'];
// The order stages start in (after build, which everything needs): the long ones that wait part of the time first,
// the short ones that only compute last, where they fill the cores the others leave idle.
const START_ORDER = ['mocha', 'ui', 'faults-cluster', 'faults', 'extension', 'typecheck', 'fuzz', 'lint'];
const wanted = process.argv.slice(2).length ? process.argv.slice(2) : all;
const totals = { passed: 0, failed: 0, skipped: 0 };
const failedStages = [];
// Named again at the very end, after every stage: { stage, title, file, error }.
const failedTests = [];
const skippedTests = [];
const mochaJobs = Number(process.env.CS_MOCHA_JOBS ?? (process.env.CS_TEST_SERIAL === '1' ? 1 : 2));
// The files whose tests took longest in a measured run (the private redis-server's ten double starts, the package's
// build and install, rendered pages under a memory limit, a 1,201-page crawl sampled for its ETA, …;
// test-artifacts/slowest-mocha.txt lists a run's slowest tests).
const LONGEST_MOCHA_FILES = [
  'out/test/integration/privateRedis.test.js',
  'out/test/package/cli.test.js',
  'out/test/integration/autoscaleMemory.test.js',
  'out/test/integration/eta.test.js',
  'out/test/integration/retryAfter.test.js',
  'out/test/integration/redisFull.test.js',
  'out/test/integration/browserLogin.test.js',
  'out/test/integration/sentinelCrawl.test.js',
  'out/test/integration/monitor.test.js',
];
// The same for the UI tests, which also run two files at a time: each file has its own code-server, browser,
// workspace folder and (for a crawl) private redis-server, and a workbench keeps about 0.8 of a core busy (measured
// from /proc/stat over the stage: 429 s on 2 cores, 0.79 busy), so two fit on two cores.
const LONGEST_UI_FILES = [
  'out/test/ui/reload.test.js',
  'out/test/ui/results.test.js',
  'out/test/ui/figures.test.js',
  'out/test/ui/changes.test.js',
  'out/test/ui/designer-newuser.test.js',
  'out/test/ui/first-run.test.js',
  'out/test/ui/explorer.test.js',
  'out/test/ui/dashboard.test.js',
];
// Every temporary folder the tests make (mkdtemp under os.tmpdir(): task files, stores, workspaces, browser profiles,
// private redis-servers' data) goes under one folder for the run, removed when it ends: a run used to leave ~150
// folders (~60 MB) in /tmp. CS_TEST_KEEP_TMP=1 keeps it, and says where, to look into a failure.
// Open to every user as /tmp is (sticky): as root, the tests run PostgreSQL as the `postgres` user in a folder here.
const runTmp = mkdtempSync(join(tmpdir(), 'cs-test-'));
chmodSync(runTmp, 0o1777);
process.env.TMPDIR = runTmp;
const statsDir = mkdtempSync(join(runTmp, 'stats-'));
// Tests that import BullMQ from node_modules (not through a bundle) would load msgpackr's native accelerator,
// which the product's bundles never do (scripts/bundle-options.mjs): run them on the same pure-JS path.
process.env.MSGPACKR_NATIVE_ACCELERATION_DISABLED = 'true';

// `out` is where a stage's output goes: the terminal, or (for a stage running beside another) a buffer printed in
// one block when the stage ends, so two stages' lines never interleave.
function run(cmd, args, { env = {}, capture = false, out: sink = live } = {}) {
  return new Promise((resolve) => {
    const piped = capture || sink !== live;
    const child = spawn(cmd, args, {
      stdio: ['ignore', piped ? 'pipe' : 'inherit', piped ? 'pipe' : 'inherit'],
      env: { ...process.env, ...env },
    });
    let out = '';
    if (piped) {
      child.stdout.on('data', (b) => (sink.stdout(b), capture && (out += b)));
      child.stderr.on('data', (b) => (sink.stderr(b), capture && (out += b)));
    }
    child.on('exit', (code, signal) => resolve({ code: code ?? (signal ? 1 : 0), out }));
  });
}
const live = {
  stdout: (b) => process.stdout.write(b),
  stderr: (b) => process.stderr.write(b),
  log: (...a) => console.log(...a),
};
function buffered() {
  const chunks = [];
  return {
    stdout: (b) => chunks.push(b),
    stderr: (b) => chunks.push(b),
    log: (...a) => chunks.push(a.join(' ') + '\n'),
    text: () => chunks.join(''),
  };
}

async function mocha(name, args, out, env = {}) {
  const stats = join(statsDir, `${name}.json`);
  const r = await run('npx', ['mocha', '--reporter', 'scripts/mocha-stats-reporter.cjs', ...args], {
    env: { ...env, CS_TEST_STATS: stats, CS_TEST_SKIP_REASONS: join(statsDir, `${name}-skips.jsonl`) },
    out,
  });
  if (existsSync(stats)) {
    const s = JSON.parse(readFileSync(stats, 'utf8'));
    totals.passed += s.passed;
    totals.failed += s.failed;
    totals.skipped += s.skipped;
    for (const f of s.failures ?? []) failedTests.push({ stage: name, ...f });
    for (const k of s.skips ?? []) skippedTests.push({ stage: name, ...k });
    writeSlowest(name, s.times ?? []);
    if (s.passed === 0 && s.failed === 0) return 1; // a stage that ran no test is a failure
  } else if (r.code !== 0) {
    totals.failed += 1;
  }
  return r.code;
}

// The 40 slowest tests and hooks of a stage, in test-artifacts/slowest-<stage>.txt: where the suite's time goes
// (it must stay under 20 minutes on a 2-core machine).
function writeSlowest(name, times) {
  const rel = (f) => f.replace(process.cwd() + '/', '');
  const lines = [...times]
    .sort((a, b) => b.ms - a.ms)
    .slice(0, 40)
    .map((t) => `${(t.ms / 1000).toFixed(1).padStart(7)} s  ${t.title}  (${rel(t.file)})`);
  const total = times.reduce((n, t) => n + t.ms, 0);
  mkdirSync('test-artifacts', { recursive: true });
  writeFileSync(
    join('test-artifacts', `slowest-${name}.txt`),
    `${name}: ${times.length} tests and slow hooks, ${(total / 1000).toFixed(0)} s in all\n${lines.join('\n')}\n`,
  );
}

/** The compiled test files below `dir` (out/test/…), sorted. */
function testFilesUnder(dir) {
  return existsSync(dir)
    ? readdirSync(dir, { recursive: true })
        .filter((f) => String(f).endsWith('.test.js'))
        .map((f) => join(dir, String(f)))
        .sort()
    : [];
}

/** `files` with those named in `first` ahead, in that order (files named there but absent are left out). */
function ordered(files, first) {
  const rank = (f) => (first.includes(f) ? first.indexOf(f) : first.length);
  return [...new Set(files)].sort((a, b) => rank(a) - rank(b));
}

// .mocharc.json is what `npx mocha` reads; the stage reads the same file so both run the same tests. Its spec entries
// are `out/test/<dir>/**/*.test.js`.
const mocharc = JSON.parse(readFileSync('.mocharc.json', 'utf8'));
function mocharcSpecFiles() {
  return mocharc.spec.flatMap((pattern) => {
    const m = /^(.*)\/\*\*\/\*\.test\.js$/.exec(pattern);
    if (!m) throw new Error(`.mocharc.json: spec '${pattern}' is not of the form <dir>/**/*.test.js`);
    return testFilesUnder(m[1]);
  });
}
/** .mocharc.json's options (the spec aside) as command-line flags, after --no-config. */
function mocharcOptions() {
  const flags = ['--no-config', '--timeout', String(mocharc.timeout)];
  if (mocharc['enable-source-maps']) flags.push('--enable-source-maps');
  if (mocharc.exit) flags.push('--exit');
  const known = new Set(['spec', 'timeout', 'enable-source-maps', 'exit']);
  const unknown = Object.keys(mocharc).filter((k) => !known.has(k));
  if (unknown.length) throw new Error(`.mocharc.json: scripts/test.mjs does not pass on ${unknown.join(', ')} yet`);
  return flags;
}

const stages = {
  build: async (out) => (await run('node', ['esbuild.mjs'], { out })).code,
  // The root project, the benchmark programs (bench/tsconfig.json: the root excludes bench/, so a renamed engine API
  // breaks here instead of in the next bench run), then each webview's own (media/<view>/tsconfig.json: browser, no
  // Node; media/shared/ with them).
  typecheck: async (out) => {
    const projects = [
      '.',
      'bench',
      ...readdirSync('media')
        .filter((d) => existsSync(join('media', d, 'tsconfig.json')))
        .map((d) => join('media', d)),
    ];
    for (const p of projects) {
      const code = (await run('npx', ['tsc', '-p', p, '--noEmit'], { out })).code;
      if (code !== 0) return code;
    }
    return 0;
  },
  // typescript-eslint's type-checked rules and the size limits (eslint.config.mjs), zero warnings, then Prettier's
  // layout: the same `npm run lint` and `npm run format:check` a contributor runs.
  lint: async (out) => {
    const code = (await run('npx', ['eslint', '--max-warnings', '0', 'src', 'media', 'test'], { out })).code;
    if (code !== 0) return code;
    return (await run('npx', ['prettier', '--check', '--log-level', 'warn', '.'], { out })).code;
  },
  // Two test files at a time, each in its own process: most of this stage's time is spent waiting for crawls,
  // workers, servers and timeouts, not computing (CS_MOCHA_JOBS=1: one file at a time, as `npx mocha` runs them;
  // the UI stage follows the same setting). The files are .mocharc.json's, listed here longest first (so that no
  // long file starts last and runs alone at the end) and each once: mocha adds a file named on its command line to
  // its config's spec without removing it from there, so naming the longest ones used to run them twice.
  mocha: (out) => {
    const files = ordered(mocharcSpecFiles(), LONGEST_MOCHA_FILES);
    const parallel = mochaJobs > 1 ? ['--parallel', '--jobs', String(mochaJobs)] : [];
    return mocha('mocha', [...mocharcOptions(), ...parallel, ...files], out);
  },
  // Fixed seed and bounded cases: the same inputs every run (test/fuzz/fuzz.test.ts says how to fuzz longer).
  fuzz: (out) =>
    mocha(
      'fuzz',
      ['--no-config', '--timeout', '600000', '--exit', '--enable-source-maps', 'out/test/fuzz/**/*.test.js'],
      out,
    ),
  // About 4-5 minutes (CS_FAULTS_SOAK=1 for the long soak); the table is also in test-artifacts/faults-table.md
  // (faults-table-cluster.md for faults-cluster). They run side by side; alone, faults keeps 1.3 of two cores busy
  // for ~220 s (/proc/stat, AMD EPYC, 2026-12-06).
  faults: (out) =>
    mocha(
      'faults',
      ['--no-config', '--timeout', '900000', '--exit', '--enable-source-maps', 'out/test/faults/**/*.test.js'],
      out,
    ),
  // The same scenarios on a real 3-primary Redis Cluster (issue 19; test/faults/redis.ts), about as long again.
  'faults-cluster': (out) =>
    mocha(
      'faults-cluster',
      ['--no-config', '--timeout', '900000', '--exit', '--enable-source-maps', 'out/test/faults/**/*.test.js'],
      out,
      { CS_FAULTS_REDIS: 'cluster' },
    ),
  extension: async (out) => {
    const r = await run('node', ['scripts/code-server/run-extension-tests.mjs'], { capture: true, out });
    // One closing line per suite (the main one and the untrusted-workspace one).
    const ms = [...r.out.matchAll(/extension: (\d+) passed, (\d+) failed/g)];
    for (const m of ms) {
      totals.passed += Number(m[1]);
      totals.failed += Number(m[2]);
    }
    // The extension-host runner prints "extension FAILED: <title>: <message>" per failed test.
    for (const m of r.out.matchAll(/^extension FAILED: (.*)$/gm))
      failedTests.push({ stage: 'extension', title: m[1], file: '', error: '' });
    if (ms.length < 2 && r.code !== 0) {
      totals.failed += 1;
    }
    return r.code;
  },
  ui: async (out) => {
    const files = testFilesUnder('out/test/ui');
    if (files.length === 0) return 0;
    const parallel = mochaJobs > 1 ? ['--parallel', '--jobs', String(mochaJobs)] : [];
    return mocha(
      'ui',
      ['--no-config', '--timeout', '180000', '--exit', ...parallel, ...ordered(files, LONGEST_UI_FILES)],
      out,
    );
  },
};

for (const name of wanted) {
  if (!stages[name]) {
    console.error(`unknown stage '${name}' (stages: ${all.join(', ')})`);
    rmSync(runTmp, { recursive: true, force: true });
    process.exit(2);
  }
}

// Stages start as the machine has room for them (issue 34: the suite must stay under 20 minutes on 2 cores). With
// fixed groups (mocha beside typecheck and fuzz, faults beside faults-cluster, extension beside lint, then ui) a run
// on an idle 2-core machine (AMD EPYC, 2026-12-07) used 2,032 CPU-s in 1,340 s, 1.52 cores: mocha's last 370 s kept
// 1.25 busy, waiting on the crawls, restarts and timeouts its tests provoke, and each group waited for its longest.
// So the next stage starts when the last 10 s left at least half a core idle (every core's times, os.cpus()), 15 s
// after the previous start at the earliest (a stage takes that long to show its load), at most MAX_RUNNING at a time;
// and up to MIN_RUNNING whatever the load, as the groups did, so a machine busy with other work is not run serially.
// Started so, the same machine's run used 2,055 CPU-s in 1,104 s, 1.89 cores.
// The first stage running prints as it runs; each other prints in one block when it ends, so two stages' lines never
// interleave. CS_TEST_SERIAL=1 runs every stage alone, in `all`'s order.
const serial = process.env.CS_TEST_SERIAL === '1';
const MAX_RUNNING = serial ? 1 : Number(process.env.CS_TEST_STAGES ?? 3);
const MIN_RUNNING = Math.min(2, MAX_RUNNING);
const IDLE_CORES_TO_START = 0.5;
const WINDOW_MS = 10_000;
const SETTLE_MS = 15_000;
const suiteStarted = Date.now();
const timeline = [];

function cpuTimes() {
  let idle = 0;
  let total = 0;
  const list = cpus();
  for (const { times: t } of list) {
    idle += t.idle;
    total += t.user + t.nice + t.sys + t.idle + t.irq;
  }
  return { at: Date.now(), idle, total, cores: list.length };
}
const samples = [cpuTimes()];
/** Cores left idle over the last WINDOW_MS (null until a window has passed). */
function idleCores() {
  const now = samples[samples.length - 1];
  const then = samples.findLast((s) => now.at - s.at >= WINDOW_MS);
  if (!then || now.total === then.total) return null;
  return (now.cores * (now.idle - then.idle)) / (now.total - then.total);
}

async function runStage(name, out) {
  const started = Date.now();
  out.log(`\n=== ${name}`);
  const code = await stages[name](out);
  const ended = Date.now();
  out.log(`=== ${name}: ${code === 0 ? 'ok' : `FAILED (exit ${code})`} in ${((ended - started) / 1000).toFixed(1)} s`);
  if (code !== 0) failedStages.push(name);
  timeline.push({ name, from: started - suiteStarted, to: ended - suiteStarted, code });
  return code;
}

let liveTaken = false;
async function startStage(name) {
  const isLive = !liveTaken;
  liveTaken ||= isLive;
  const out = isLive ? live : buffered();
  const code = await runStage(name, out);
  if (isLive) liveTaken = false;
  else
    process.stdout.write(`\n--- output of ${name} (ran beside other stages) ---${out.text()}--- end of ${name} ---\n`);
  return code;
}

// code-server (scripts/code-server/install.sh: idempotent, a minute of npm install on a fresh machine, 0.2 s once
// installed) is installed beside the first stages; only the stages that run it wait for it.
const NEEDS_CODE_SERVER = new Set(['extension', 'ui']);
let codeServer = null;
let codeServerCode = null;
if (wanted.some((n) => NEEDS_CODE_SERVER.has(n))) {
  const out = buffered();
  codeServer = run('bash', ['scripts/code-server/install.sh'], { out }).then(({ code }) => {
    process.stdout.write(`\n--- code-server ---\n${out.text()}--- end of code-server ---\n`);
    return code;
  });
  void codeServer.then((code) => (codeServerCode = code));
}
const waitsForCodeServer = (name) => NEEDS_CODE_SERVER.has(name) && codeServerCode === null;
/** The next stage to start: the first in order, or while that one waits for code-server, the last (a short one). */
function nextStage() {
  if (!waitsForCodeServer(pending[0])) return 0;
  const i = pending.findLastIndex((n) => !waitsForCodeServer(n));
  return i;
}

const order = serial ? all : ['build', ...START_ORDER];
const pending = order.filter((n) => wanted.includes(n));
const running = new Map();
let lastStart = 0;
let stopStarting = false;
while (pending.length || running.size) {
  samples.push(cpuTimes());
  while (samples.length > 2 && samples[samples.length - 1].at - samples[1].at >= WINDOW_MS) samples.shift();
  const idle = idleCores();
  const settled = Date.now() - lastStart >= SETTLE_MS;
  const room =
    running.size === 0 ||
    (running.size < MIN_RUNNING && settled) ||
    (running.size < MAX_RUNNING && settled && idle !== null && idle >= IDLE_CORES_TO_START);
  // Every other stage runs what the build writes.
  const next = pending.length && !running.has('build') ? nextStage() : -1;
  if (next >= 0 && !stopStarting && room) {
    const [name] = pending.splice(next, 1);
    lastStart = Date.now();
    if (NEEDS_CODE_SERVER.has(name) && codeServerCode !== 0) {
      console.log(`\n=== ${name}: FAILED: scripts/code-server/install.sh exited with ${codeServerCode}`);
      failedStages.push(name);
      totals.failed += 1;
      continue;
    }
    running.set(
      name,
      startStage(name).then((code) => {
        running.delete(name);
        // Nothing after a broken build can be trusted: the stages run what it wrote.
        if (code !== 0 && name === 'build') stopStarting = true;
      }),
    );
    continue;
  }
  if (stopStarting && running.size === 0) break;
  await Promise.race([
    new Promise((r) => setTimeout(r, 2500)),
    ...running.values(),
    ...(codeServerCode === null && codeServer ? [codeServer] : []),
  ]);
}

// When each stage ran, in seconds from the start: where the suite's time went beside test-artifacts/slowest-*.txt.
mkdirSync('test-artifacts', { recursive: true });
writeFileSync(
  join('test-artifacts', 'stages.txt'),
  timeline
    .sort((a, b) => a.from - b.from)
    .map(
      (t) =>
        `${t.name.padEnd(15)} ${(t.from / 1000).toFixed(0).padStart(5)} s -> ${(t.to / 1000).toFixed(0).padStart(5)} s${t.code ? '  FAILED' : ''}`,
    )
    .join('\n') + `\nall: ${((Date.now() - suiteStarted) / 1000).toFixed(0)} s\n`,
);
console.log(
  `\nStages (s from the start; test-artifacts/stages.txt):\n${readFileSync(join('test-artifacts', 'stages.txt'), 'utf8')}`,
);

if (skippedTests.length) {
  console.log(`\nSkipped tests (${skippedTests.length}):`);
  for (const t of skippedTests) console.log(`  [${t.stage}] ${t.title}\n      ${t.reason ?? 'no reason given'}`);
}
if (failedTests.length) {
  console.log(`\nFailed tests (${failedTests.length}):`);
  for (const t of failedTests)
    console.log(
      `  [${t.stage}] ${t.title}${t.file ? ` (${t.file.replace(process.cwd() + '/', '')})` : ''}\n      ${t.error}`,
    );
}
if (failedStages.length) console.log(`\nFailed stages: ${failedStages.join(', ')}`);
console.log(
  `\ntests: ${totals.passed} passed, ${totals.failed} failed${totals.skipped ? `, ${totals.skipped} skipped` : ''}`,
);
if (process.env.CS_TEST_KEEP_TMP === '1') console.log(`\nThe run's temporary folders are kept in ${runTmp}`);
else rmSync(runTmp, { recursive: true, force: true, maxRetries: 3 });
process.exit(failedStages.length ? 1 : 0);
