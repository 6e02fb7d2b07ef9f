import { readlinkSync } from 'node:fs';
import { parentPort, workerData } from 'node:worker_threads';
import { runCase, type FuzzKind } from '../cases';

// The fuzz loop, in a worker thread so the main thread can time every input and terminate a hang.
// Messages: {t:'thread', tid} first, {t:'start', i} before a case, {t:'done', i, ms, label, violations} after it, {t:'end'} at the end.

// The thread's own id, so the main thread can read how much CPU it has used (a hang is measured in CPU time, not
// in time on the clock, which a busy machine stretches): "<pid>/task/<tid>" on Linux, nothing elsewhere.
let tid: string | null = null;
try {
  tid = readlinkSync('/proc/thread-self').split('/').pop() ?? null;
} catch {
  // not Linux: the main thread times cases on the clock
}
parentPort!.postMessage({ t: 'thread', tid });

const { kind, seed, from, to, deadline } = workerData as {
  kind: FuzzKind;
  seed: number;
  from: number;
  to: number;
  deadline: number;
};
for (let i = from; i < to; i++) {
  if (Date.now() > deadline) break;
  parentPort!.postMessage({ t: 'start', i });
  const t0 = performance.now();
  let outcome;
  try {
    outcome = runCase(kind, seed, i);
  } catch (err) {
    outcome = { violations: [`the case itself threw: ${(err as Error).stack ?? String(err)}`], label: 'harness' };
  }
  parentPort!.postMessage({
    t: 'done',
    i,
    ms: performance.now() - t0,
    label: outcome.label,
    violations: outcome.violations,
  });
}
parentPort!.postMessage({ t: 'end' });
