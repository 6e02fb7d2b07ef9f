import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Worker } from 'node:worker_threads';
import { caseInput, type FuzzKind } from './cases';
import { fuzzSettings } from './rng';

// Fuzzers with a fixed seed and a bounded number of cases (and a time budget), so CI runs the same inputs every
// time. Every input runs in a worker thread whose main thread times it: an input that uses more CPU than the
// per-input bound is a hang, saved to test-artifacts/fuzz/ with its seed and index. The bound is on the thread's
// own CPU time (Linux; the clock elsewhere): on the clock, the largest inputs (a 1 MB task file of 20,000 rules, ~3 s
// of CPU) passed for hangs on a machine busy with the rest of the suite. Longer runs:
//   FUZZ_SEED=7 FUZZ_CASES=200000 FUZZ_BUDGET_MS=3600000 npm run test:fuzz
// A violation found here becomes a regression test in test/fuzz/regressions/ (or test/unit/).

interface Finding {
  readonly index: number;
  readonly what: string;
}

interface FuzzReport {
  readonly kind: FuzzKind;
  readonly seed: number;
  readonly cases: number;
  readonly ms: number;
  readonly slowestMs: number;
  readonly slowestIndex: number;
  readonly labels: Record<string, number>;
  readonly findings: Finding[];
}

const ARTIFACTS = resolve('test-artifacts/fuzz');
// The main thread of the CLI and the extension host has about 1 MB of stack; fuzz under the same limit so a
// recursion that overflows there overflows here too.
const STACK_MB = 1;

async function fuzz(kind: FuzzKind, defaults: { cases: number; budgetMs: number }): Promise<FuzzReport> {
  const s = fuzzSettings(kind, defaults);
  const started = Date.now();
  const deadline = started + s.budgetMs;
  const findings: Finding[] = [];
  const labels: Record<string, number> = {};
  let cases = 0;
  let slowestMs = 0;
  let slowestIndex = -1;
  let next = 0;
  while (next < s.cases && Date.now() < deadline) {
    // Runs cases [next, s.cases) until the end, the deadline, or a hang (then resumes after the hung case).
    next = await new Promise<number>((resolveRun, rejectRun) => {
      const w = new Worker(join(__dirname, 'worker', 'index.js'), {
        workerData: { kind, seed: s.seed, from: next, to: s.cases, deadline },
        resourceLimits: { stackSizeMb: STACK_MB, maxOldGenerationSizeMb: 1024 },
      });
      let current = -1;
      let last = next - 1;
      let clock: CaseClock = wallClock();
      let startedAt = Date.now();
      let terminated = false;
      const watchdog = setInterval(() => {
        // And ten times that on the clock: a case blocked without using the CPU is a hang too.
        if (current >= 0 && (clock.elapsedMs() > s.perInputMs || Date.now() - startedAt > 10 * s.perInputMs)) {
          clearInterval(watchdog);
          terminated = true;
          const hung = current;
          const file = save(kind, s.seed, hung, 'hang');
          findings.push({
            index: hung,
            what: `hang: no answer after ${s.perInputMs} ms of ${clock.what} (input saved to ${file})`,
          });
          void w.terminate().then(() => resolveRun(hung + 1));
        }
      }, 100);
      let tid: string | null = null;
      w.on('message', (m: { t: string; i: number; ms: number; label: string; violations: string[]; tid?: string }) => {
        if (m.t === 'thread') {
          tid = m.tid ?? null;
        } else if (m.t === 'start') {
          current = m.i;
          startedAt = Date.now();
          clock = (tid !== null && threadCpuClock(tid)) || wallClock();
        } else if (m.t === 'done') {
          current = -1;
          last = m.i;
          cases++;
          labels[m.label] = (labels[m.label] ?? 0) + 1;
          if (m.ms > slowestMs) {
            slowestMs = m.ms;
            slowestIndex = m.i;
          }
          if (m.violations.length > 0) {
            const file = save(kind, s.seed, m.i, 'violation');
            for (const v of m.violations) findings.push({ index: m.i, what: `${v} (input: ${file})` });
          }
        } else if (m.t === 'end') {
          clearInterval(watchdog);
          resolveRun(s.cases);
        }
      });
      w.on('error', (err) => {
        // An uncaught error in the thread (a stack overflow outside any try, an out-of-memory): a finding.
        clearInterval(watchdog);
        const at = current >= 0 ? current : last + 1;
        const file = save(kind, s.seed, at, 'crash');
        findings.push({ index: at, what: `worker died: ${err.message.slice(0, 200)} (input saved to ${file})` });
        resolveRun(at + 1);
      });
      w.on('exit', (code) => {
        clearInterval(watchdog);
        if (code !== 0 && current >= 0 && !terminated)
          rejectRun(new Error(`fuzz worker exited with code ${code} during case ${current}`));
      });
    });
  }
  return { kind, seed: s.seed, cases, ms: Date.now() - started, slowestMs, slowestIndex, labels, findings };
}

/** How long the case in progress has run: `elapsedMs()` since the case began, in `what`. */
interface CaseClock {
  readonly what: string;
  elapsedMs(): number;
}

function wallClock(): CaseClock {
  const at = Date.now();
  return { what: 'time', elapsedMs: () => Date.now() - at };
}

/**
 * The fuzz thread's CPU time since now, from /proc/self/task/<tid>/schedstat (its first field: nanoseconds on a
 * CPU), or null where that cannot be read.
 */
function threadCpuClock(tid: string): CaseClock | null {
  const file = `/proc/self/task/${tid}/schedstat`;
  const read = (): number | null => {
    try {
      return Number(readFileSync(file, 'utf8').split(' ')[0]) / 1e6;
    } catch {
      return null;
    }
  };
  const at = read();
  if (at === null || !Number.isFinite(at)) return null;
  // A thread that is gone (the case ended with it) has used no more.
  return { what: 'CPU time', elapsedMs: () => (read() ?? at) - at };
}

function save(kind: FuzzKind, seed: number, index: number, why: string): string {
  mkdirSync(ARTIFACTS, { recursive: true });
  const file = join(ARTIFACTS, `${kind}-${why}-seed${seed}-case${index}.txt`);
  try {
    writeFileSync(file, caseInput(kind, seed, index));
  } catch (err) {
    writeFileSync(file, `could not regenerate the input: ${(err as Error).message}`);
  }
  return file;
}

function summary(r: FuzzReport): string {
  const labels = Object.entries(r.labels)
    .map(([k, v]) => `${k} ${v}`)
    .join(', ');
  return `${r.kind}: seed ${r.seed}, ${r.cases} cases in ${(r.ms / 1000).toFixed(1)} s (${labels}); slowest case #${r.slowestIndex} ${r.slowestMs.toFixed(0)} ms; ${r.findings.length} finding(s)`;
}

function assertClean(r: FuzzReport): void {
  const shown = r.findings
    .slice(0, 20)
    .map((f) => `  case #${f.index}: ${f.what}`)
    .join('\n');
  assert.equal(
    r.findings.length,
    0,
    `${summary(r)}\n${shown}${r.findings.length > 20 ? `\n  … and ${r.findings.length - 20} more` : ''}`,
  );
}

describe('fuzz: hostile input never crashes, hangs or slips through', function () {
  this.timeout(600_000);

  it('task files: parseTask always answers with diagnostics or a usable task, never a throw or a hang', async () => {
    const r = await fuzz('task', { cases: 2500, budgetMs: 75_000 });
    console.log(`      ${summary(r)}`);
    assert.ok(r.cases >= 500, `only ${r.cases} cases ran within the budget`);
    assertClean(r);
  });

  it('links: only http(s) to allowed, non-private hosts is ever kept, in a stable canonical form', async () => {
    const r = await fuzz('url', { cases: 2000, budgetMs: 40_000 });
    console.log(`      ${summary(r)}`);
    assert.ok(r.cases >= 500, `only ${r.cases} cases ran within the budget`);
    assertClean(r);
  });
});
