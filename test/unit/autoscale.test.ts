import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  AUTOSCALE,
  decide,
  initialState,
  type ConcurrencySample,
  type ConcurrencyState,
} from '../../src/core/autoscale/concurrency';
import { decideWorkers, PROCESS_AUTOSCALE, type ProcessSample } from '../../src/core/autoscale/processes';
import { parseCeleryAutoscale, parseScaled, ScaleSpecError } from '../../src/core/autoscale/range';
import { concurrencyFlag, maxMemoryFlag, workersFlag } from '../../src/worker/args';
import { memoryLimit } from '../../src/worker/autoscale';
import { FetchSlots, type InSlot } from '../../src/worker/fetchSlots';
import { HostThrottles } from '../../src/worker/hostThrottle';
import {
  HEALTH_STALE_MS,
  healthAnswer,
  parseHealthAddress,
  serveHealth,
  type HealthState,
} from '../../src/worker/health';
import type { AddressInfo } from 'node:net';
import { afterAnswer, HOST_THROTTLE, hostCap } from '../../src/core/autoscale/hostThrottle';
import { usefulRequests } from '../../src/frontier/demand';
import { tempDir } from '../support/tempDir';

// Issue 36: the autoscalers' decisions on fixed inputs (core/autoscale/*), the flags, and the slots' resize.

const LIMITS = { min: 2, max: 64 };

/** A window of 5 s at `c` requests on a calm machine and calm sites, `pages` finished. */
function sample(at: number, pages: number, over: Partial<ConcurrencySample> = {}): ConcurrencySample {
  return {
    at,
    windowMs: 5_000,
    pages,
    busy: 1,
    loopBusy: 0.3,
    loopDelayMs: 2,
    machineCpu: 0.4,
    memory: { used: 200e6, limit: null },
    redisMs: 1,
    sites: { answered: pages, throttled: 0, latencyMs: 200 },
    useful: null,
    ...over,
  };
}

/** Runs windows through the controller: each entry gives the pages the window saw at the concurrency of the time. */
function run(
  start: number,
  pagesAt: (c: number, i: number) => number | (Partial<ConcurrencySample> & { pages: number }),
  windows: number,
  t0 = 1_000_000,
) {
  let state: ConcurrencyState = initialState(start);
  const path = [start];
  const reasons: string[] = [];
  for (let i = 0; i < windows; i++) {
    const p = pagesAt(state.concurrency, i);
    const s = typeof p === 'number' ? sample(t0 + i * 5_000, p) : sample(t0 + i * 5_000, p.pages, p);
    const d = decide(LIMITS, state, s);
    state = d.state;
    path.push(d.concurrency);
    reasons.push(d.reason);
  }
  return { path, reasons, state };
}

describe('autoscaling: the concurrency controller (issue 36)', () => {
  it('doubles while a doubling brings at least 25% more pages/s, up to the maximum', () => {
    // A site answering in 200 ms: pages/s is concurrency / 0.2 (5 s windows).
    const { path, reasons } = run(16, (c) => c * 25, 4);
    assert.deepEqual(path.slice(0, 3), [16, 32, 64]);
    assert.match(reasons[0]!, /^concurrency 16 → 32: 80 pages\/s at 16, CPU 40%, .*sites answering in 200 ms/);
    assert.match(reasons.at(-1)!, /at the maximum 64/);
  });

  it('stops doubling at a plateau, then probes in small steps that must each pay', () => {
    // Throughput stops growing past 18 (the machine's limit, say).
    const rate = (c: number) => Math.min(c, 18) * 25;
    const { path, reasons } = run(16, rate, 12);
    assert.equal(path[1], 32, 'the first doubling is tried');
    assert.match(reasons[1]!, /concurrency stays 32: plateau: 32 gave 13% more pages\/s than 16/);
    // Quiet, then steps of an eighth: 32 → 36 gives nothing and is undone; never doubled again.
    assert.ok(path.includes(36), `it probes: ${path.join(' ')}`);
    assert.ok(
      path.every((c) => c <= 36),
      `path ${path.join(' ')}`,
    );
    assert.match(reasons[path.indexOf(36)]!, /^concurrency 36 → 32: 36 gave 90 pages\/s, no more than 90 at 32/);
    // A doubling that brings nothing is undone at once.
    const flat = run(16, () => 400, 2);
    assert.deepEqual(flat.path, [16, 32, 16]);
  });

  it('undoes a step that made pages/s fall', () => {
    let state: ConcurrencyState = { ...initialState(32), phase: 'probe' };
    let d = decide(LIMITS, state, sample(0, 800));
    assert.equal(d.concurrency, 36);
    state = d.state;
    d = decide(LIMITS, state, sample(5_000, 600));
    assert.equal(d.concurrency, 32);
    assert.match(d.reason, /36 gave 120 pages\/s, less than 160 at 32/);
  });

  it('judges nothing while paused: a doubling made just before a pause is not undone for its 0 pages/s', () => {
    // 16 → 32 on a site answering in 200 ms, then the task is paused (Pause, or Stop): windows with no page at all.
    const { path, reasons } = run(16, (c, i) => (i === 0 ? c * 25 : { pages: 0, paused: true, busy: 0 }), 3);
    assert.deepEqual(path, [16, 32, 32, 32]);
    assert.equal(
      reasons[1],
      'concurrency stays 32: paused: no page of its tasks can be taken (Pause, or Stop), nothing judged',
    );
    // Unpaused, the same windows undid the doubling ("32 gave 0.0 pages/s, less than 80 at 16").
    const unpaused = run(16, (c, i) => (i === 0 ? c * 25 : { pages: 0, busy: 0, windowMs: 30_000 }), 2);
    assert.deepEqual(unpaused.path, [16, 32, 16]);
    // Resumed, a fresh window judges from there: growth goes on.
    const resumed = run(16, (c, i) => (i === 1 ? { pages: 0, paused: true, busy: 0 } : c * 25), 3);
    assert.deepEqual(resumed.path, [16, 32, 32, 64]);
  });

  it('backs off on 429/503, to the last level that drew none, and stays under the level that drew them', () => {
    // A site that answers 503 above 8 in flight.
    const site = (c: number) => ({
      pages: Math.min(c, 8) * 25,
      sites: { answered: c * 25, throttled: c > 8 ? (c - 8) * 25 : 0, latencyMs: 200 },
    });
    const { path, reasons, state } = run(16, site, 40);
    assert.equal(path[1], 8, 'halved at once: no level below 16 was known good');
    assert.match(reasons[0]!, /^concurrency 16 → 8: sites answered 429\/503 to 200 of 400 request\(s\) at 16/);
    // It probes 9 once after the quiet time, is pushed back to 8, and never goes above 8 again.
    const afterProbe = path.indexOf(9);
    assert.ok(afterProbe > 0, `it probes: ${path.join(' ')}`);
    assert.ok(
      path.slice(afterProbe + 1).every((c) => c <= 8),
      `path ${path.join(' ')}`,
    );
    assert.equal(state.concurrency, 8);
    assert.match(reasons.at(-1)!, /kept under 9, where the sites answered 429\/503/);
  });

  it('backs off when the sites slow down under load, and when the machine is saturated', () => {
    const base = decide(LIMITS, initialState(16), sample(0, 400)).state;
    const slow = decide(LIMITS, base, sample(5_000, 400, { sites: { answered: 400, throttled: 0, latencyMs: 900 } }));
    assert.ok(slow.concurrency < 32);
    assert.match(slow.reason, /sites answering in 900 ms, 4\.5× the 200 ms they started at/);
    const late = decide(LIMITS, initialState(16), sample(0, 400, { loopDelayMs: 300 }));
    assert.equal(late.concurrency, 12);
    assert.match(late.reason, /^concurrency 16 → 12: event loop 300 ms late/);
    const redis = decide(LIMITS, initialState(16), sample(0, 400, { redisMs: 600 }));
    assert.match(redis.reason, /Redis answering in 600 ms/);
    const slowRedis = decide(LIMITS, initialState(16), sample(0, 400, { redisMs: 150 }));
    assert.equal(slowRedis.concurrency, 16);
    assert.match(slowRedis.reason, /no growth: Redis answering in 150 ms/);
  });

  it("on a saturated machine, neither slow answers nor empty slots stop it: pages/s decides (the bench's case)", () => {
    const busyMachine = { machineCpu: 1, busy: 0.2, redisMs: 600, loopBusy: 0.7 };
    const base = decide(
      LIMITS,
      initialState(16),
      sample(0, 400, { ...busyMachine, sites: { answered: 400, throttled: 0, latencyMs: 12 } }),
    );
    assert.equal(base.concurrency, 32, base.reason);
    const slow = decide(
      LIMITS,
      base.state,
      sample(5_000, 600, { ...busyMachine, sites: { answered: 600, throttled: 0, latencyMs: 110 } }),
    );
    assert.ok(slow.concurrency >= 32, `no back-off on answer times the machine's own load explains: ${slow.reason}`);
    // The same slow answers on a machine with cores to spare are the sites': it backs off.
    const calm = decide(
      LIMITS,
      base.state,
      sample(5_000, 600, { sites: { answered: 600, throttled: 0, latencyMs: 110 } }),
    );
    assert.ok(calm.concurrency < 32, calm.reason);
    // And 503s back it off whatever the machine.
    const shed = decide(
      LIMITS,
      base.state,
      sample(5_000, 600, { ...busyMachine, sites: { answered: 600, throttled: 100, latencyMs: 12 } }),
    );
    assert.ok(shed.concurrency < 32, shed.reason);
  });

  it('keeps under a memory limit: backs off near it, does not grow close to it', () => {
    const near = decide(LIMITS, initialState(16), sample(0, 400, { memory: { used: 1.9e9, limit: 2e9 } }));
    assert.ok(near.concurrency < 16);
    assert.match(near.reason, /memory 1\.8 GB of the 1\.9 GB limit|memory .* of the .* limit/);
    const close = decide(LIMITS, initialState(16), sample(0, 400, { memory: { used: 1.7e9, limit: 2e9 } }));
    assert.equal(close.concurrency, 16);
    assert.match(close.reason, /no growth: memory/);
  });

  it('judges memory pressure at once and halves; grows only as far as memory per request leaves room', () => {
    // Two pages in 0.5 s: not a window to judge, unless memory is at its limit.
    const quick = { windowMs: 500, pages: 2 };
    assert.equal(decide(LIMITS, initialState(16), sample(0, 2, quick)).judged, false);
    const pressed = decide(LIMITS, initialState(16), sample(0, 2, { ...quick, memory: { used: 1.9e9, limit: 2e9 } }));
    assert.equal(pressed.judged, true);
    assert.equal(pressed.concurrency, 8);
    // 4 requests in 1 GB of a 2 GB limit: 7 fit under its 90% (4 × 1.8 / 1), not the doubling's 8.
    const room = decide(LIMITS, initialState(4), sample(0, 400, { memory: { used: 1e9, limit: 2e9 } }));
    assert.equal(room.concurrency, 7, room.reason);
    // 2 in 800 MB of 1.2 GB (under the 80% hold): a third would pass 90% (3 × 400 MB).
    const none = decide(LIMITS, initialState(2), sample(0, 400, { memory: { used: 0.8e9, limit: 1.2e9 } }));
    assert.equal(none.concurrency, 2);
    assert.match(none.reason, /no growth: memory at 3 would pass its back-off share/);
    // Rendered pages' memory comes and goes: 2 in 653 MB now would make room for a third (3 × 327 MB under 90% of
    // 1.2 GB), but the window's readings went up to 800 MB, and at that a third passes 90% (seen: 1.27 GB at 3).
    const between = { used: 0.653e9, limit: 1.2e9 };
    assert.equal(decide(LIMITS, initialState(2), sample(0, 400, { memory: between })).concurrency, 3);
    const peaked = decide(LIMITS, initialState(2), sample(0, 400, { memory: { ...between, peak: 0.8e9 } }));
    assert.equal(peaked.concurrency, 2, peaked.reason);
    assert.match(peaked.reason, /no growth: memory at 3 would pass its back-off share/);
  });

  it('does not grow past what the waiting work can use, nor while the slots are not full, nor when CPU-bound', () => {
    const noWork = decide(LIMITS, initialState(16), sample(0, 400, { useful: 10 }));
    assert.equal(noWork.concurrency, 16);
    assert.match(noWork.reason, /the waiting pages keep at most 10 request\(s\) busy/);
    const some = decide(LIMITS, initialState(16), sample(0, 400, { useful: 20 }));
    assert.equal(some.concurrency, 20, 'grows only as far as the work goes');
    const idle = decide(LIMITS, initialState(16), sample(0, 400, { busy: 0.4 }));
    assert.equal(idle.concurrency, 16);
    assert.match(idle.reason, /slots 40% busy/);
    const cpu = decide(LIMITS, initialState(16), sample(0, 400, { loopBusy: 0.97 }));
    assert.equal(cpu.concurrency, 16);
    assert.match(cpu.reason, /CPU-bound \(event loop 97% busy\)/);
  });

  it('waits for enough pages before judging, but judges 429/503 at once', () => {
    const few = decide(LIMITS, initialState(16), sample(0, 5, { windowMs: 3_000 }));
    assert.equal(few.judged, false);
    const throttled = decide(
      LIMITS,
      initialState(16),
      sample(0, 2, { windowMs: 300, sites: { answered: 10, throttled: AUTOSCALE.throttledNow, latencyMs: 5 } }),
    );
    assert.equal(throttled.judged, true);
    assert.equal(throttled.concurrency, 8);
  });

  it('never undoes a manual resize within the hold time (Celery does)', () => {
    let d = decide(LIMITS, initialState(16), sample(0, 0, { manual: 40 }));
    assert.equal(d.concurrency, 40);
    assert.match(d.reason, /^concurrency 16 → 40: resized by hand; held for 10 min/);
    // Plenty of reasons to move: a saturated loop, no work. Held.
    for (let t = 5_000; t < AUTOSCALE.manualHoldMs; t += 60_000) {
      d = decide(LIMITS, d.state, sample(t, 400, { loopDelayMs: 400, useful: 3 }));
      assert.equal(d.concurrency, 40);
      assert.match(d.reason, /held at 40 after a manual resize/);
    }
    d = decide(LIMITS, d.state, sample(AUTOSCALE.manualHoldMs + 1, 400, { loopDelayMs: 400 }));
    assert.equal(d.concurrency, 30, 'after the hold, the back-off applies');
    const outside = decide(LIMITS, initialState(16), sample(0, 0, { manual: 500 }));
    assert.equal(outside.concurrency, 64);
    assert.match(outside.reason, /asked 500, kept within 2\.\.64/);
  });
});

describe('autoscaling: local worker processes (issue 36)', () => {
  const limits = { min: 1, max: 4 };
  const s = (over: Partial<ProcessSample>): ProcessSample => ({
    at: 100_000,
    loopBusy: [0.95],
    machineCpu: 0.5,
    cores: 2,
    waitingPages: 5_000,
    fleetConcurrency: 16,
    ...over,
  });
  it('adds a process when the workers are CPU-bound on their cores and a core is idle', () => {
    const d = decideWorkers(limits, { workers: 1, settleUntil: 0 }, s({}));
    assert.equal(d.workers, 2);
    assert.match(
      d.reason,
      /^workers 1 → 2: CPU-bound on their cores with idle cores left; workers 95% busy on their cores, CPU 50% \(1\.0 of 2 cores idle\), 5000 page\(s\) waiting/,
    );
    assert.equal(d.state.settleUntil, 100_000 + PROCESS_AUTOSCALE.settleMs);
  });
  it('does not add one without an idle core, without work, when not CPU-bound, or while settling', () => {
    assert.equal(decideWorkers(limits, { workers: 1, settleUntil: 0 }, s({ machineCpu: 0.9 })).workers, 1);
    assert.equal(decideWorkers(limits, { workers: 1, settleUntil: 0 }, s({ waitingPages: 10 })).workers, 1);
    assert.equal(decideWorkers(limits, { workers: 1, settleUntil: 0 }, s({ loopBusy: [0.5] })).workers, 1);
    assert.equal(decideWorkers(limits, { workers: 1, settleUntil: 200_000 }, s({})).workers, 1);
    assert.equal(
      decideWorkers(limits, { workers: 2, settleUntil: 0 }, s({ loopBusy: [0.95] })).workers,
      2,
      'one worker has not reported yet',
    );
  });
  it('removes one when the machine is saturated and the workers wait for it', () => {
    const d = decideWorkers(
      limits,
      { workers: 3, settleUntil: 0 },
      s({ loopBusy: [0.4, 0.45, 0.5], machineCpu: 0.99 }),
    );
    assert.equal(d.workers, 2);
    assert.match(d.reason, /the machine is saturated and the workers wait for it/);
  });
  it('keeps its workers while the task is paused, however busy something else keeps the machine', () => {
    const d = decideWorkers(
      limits,
      { workers: 3, settleUntil: 0 },
      s({ loopBusy: [0.01, 0.01, 0.01], machineCpu: 0.99, paused: true }),
    );
    assert.equal(d.workers, 3);
    assert.match(d.reason, /^workers stay 3: paused: its workers take no page \(Pause, or Stop\); /);
  });
});

describe('autoscaling: flags (issue 36)', () => {
  it("reads --concurrency N|auto|MIN..MAX and Celery's --autoscale MAX,MIN", () => {
    assert.deepEqual(concurrencyFlag({}), { kind: 'fixed', n: 16 });
    assert.deepEqual(concurrencyFlag({ concurrency: '8' }), { kind: 'fixed', n: 8 });
    assert.deepEqual(concurrencyFlag({ concurrency: 'auto' }), { kind: 'auto', min: 2, max: 64 });
    assert.deepEqual(concurrencyFlag({ concurrency: '4..32' }), { kind: 'auto', min: 4, max: 32 });
    assert.deepEqual(concurrencyFlag({ autoscale: '32,4' }), { kind: 'auto', min: 4, max: 32 });
    assert.deepEqual(parseCeleryAutoscale('10'), { kind: 'auto', min: 1, max: 10 });
    assert.deepEqual(parseScaled('5..5', 'workers', { min: 1, max: 2 }), { kind: 'fixed', n: 5 });
    assert.deepEqual(workersFlag('auto', 4), { kind: 'auto', min: 1, max: 4 });
    assert.deepEqual(workersFlag(undefined, 4), { kind: 'fixed', n: 2 });
    // The run's driver only: the fleet's workers fetch (docs/deploy.md). A concurrency of 0 is still refused.
    assert.deepEqual(workersFlag('0', 4), { kind: 'fixed', n: 0 });
    assert.throws(() => workersFlag('many', 4), /--workers 'many': expected a whole number \(0: no local worker\)/);
    assert.throws(() => workersFlag('0..2', 4), /the minimum must be a whole number of at least 1/);
    assert.throws(() => concurrencyFlag({ concurrency: '0' }), ScaleSpecError);
    assert.equal(maxMemoryFlag('2GB'), 2 * 1024 ** 3);
  });
  it('says what is wrong with a bad value', () => {
    assert.throws(
      () => concurrencyFlag({ concurrency: '32..4' }),
      (e: Error) =>
        e instanceof ScaleSpecError &&
        /--concurrency '32\.\.4': the range is MIN\.\.MAX: 4 is less than 32/.test(e.message),
    );
    assert.throws(
      () => concurrencyFlag({ autoscale: '4,32' }),
      /--autoscale '4,32': MAX comes first \(Celery's order\)/,
    );
    assert.throws(() => concurrencyFlag({ autoscale: '8,2', concurrency: '4' }), /not both/);
    assert.throws(
      () => concurrencyFlag({ concurrency: 'lots' }),
      /--concurrency 'lots': expected a whole number of at least 1, 'auto', or MIN\.\.MAX/,
    );
    assert.throws(() => maxMemoryFlag('huge'), /--max-memory 'huge'/);
  });
});

describe('autoscaling: measurements (issue 36)', () => {
  it('reads the cgroup memory limit when there is one, the smaller of it and --max-memory', () => {
    const dir = tempDir('cs-cgroup-');
    writeFileSync(join(dir, 'memory.max'), '1073741824\n');
    writeFileSync(join(dir, 'memory.current'), '536870912\n');
    const cg = memoryLimit(undefined, () => 1, dir);
    assert.equal(cg.limit, 1073741824);
    assert.equal(cg.used(), 536870912, "the container's use, against the container's limit");
    assert.equal(memoryLimit(1e6, () => 7, dir).limit, 1e6);
    assert.equal(memoryLimit(1e6, () => 7, dir).used(), 7);
    writeFileSync(join(dir, 'memory.max'), 'max\n');
    assert.equal(memoryLimit(undefined, () => 1, dir).limit, null);
  });

  it("bounds the useful requests by the waiting pages and their hosts' limits", () => {
    assert.equal(usefulRequests({ pages: 1000, hosts: 3 }, 4, 0, 1), 12);
    assert.equal(usefulRequests({ pages: 5, hosts: 30 }, 4, 0, 1), 5);
    // Two workers: a fair share, or what the other leaves.
    assert.equal(usefulRequests({ pages: 1000, hosts: 10 }, 4, 8, 2), 32);
    assert.equal(usefulRequests({ pages: 1000, hosts: 10 }, 4, 60, 2), 20);
  });

  it('resizes the request slots: growth starts waiting requests at once, a shrink takes slots back as requests end', async () => {
    const slots = new FetchSlots(2);
    const gates = Array.from({ length: 5 }, () => {
      let resolve!: () => void;
      const promise = new Promise<void>((r) => (resolve = r));
      return { promise, resolve };
    });
    const started: number[] = [];
    const runs = gates.map((g, i) => slots.run(async () => (started.push(i), g.promise)));
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(started, [0, 1]);
    slots.resize(4);
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(started, [0, 1, 2, 3]);
    slots.resize(1);
    assert.equal(slots.size, 1);
    gates[0]!.resolve();
    gates[1]!.resolve();
    gates[2]!.resolve();
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(started, [0, 1, 2, 3], 'three ended, but 1 slot with one still in flight: none starts');
    gates[3]!.resolve();
    await new Promise((r) => setImmediate(r));
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(started, [0, 1, 2, 3, 4]);
    gates[4]!.resolve();
    await Promise.all(runs);
  });
});

describe('autoscaling: per-host back-off (issue 36)', () => {
  it('halves a host that answers 429/503, once a second however many say so, and gives turns back one per cap of good answers', () => {
    let s = hostCap(16);
    const r = afterAnswer(16, s, { at: 10_000, ms: 50, throttled: true, inFlight: 16 });
    assert.equal(r.state.cap, 8);
    assert.equal(
      r.reason,
      'answered 429/503 with 16 request(s) out: at most 8 request(s) at once (was 16), fewer than 16 for 5 min',
    );
    s = r.state;
    // The rest of the burst, sent at 16, says nothing new.
    for (let i = 0; i < 7; i++) s = afterAnswer(16, s, { at: 10_100, ms: 50, throttled: true, inFlight: 16 }).state;
    assert.equal(s.cap, 8);
    // 8 good answers: one more turn.
    for (let i = 0; i < 8; i++) s = afterAnswer(16, s, { at: 11_000 + i, ms: 50, throttled: false, inFlight: 8 }).state;
    assert.equal(s.cap, 9);
    // Under the level it pushed back at while that holds, then up to the task's per-host concurrency, never above.
    for (let i = 0; i < 500; i++)
      s = afterAnswer(16, s, { at: 12_000 + i, ms: 50, throttled: false, inFlight: 9 }).state;
    assert.equal(s.cap, 15);
    const later = 10_000 + HOST_THROTTLE.ceilingMs;
    for (let i = 0; i < 500; i++)
      s = afterAnswer(16, s, { at: later + i, ms: 50, throttled: false, inFlight: 15 }).state;
    assert.equal(s.cap, 16);
  });

  it('settles under the number of requests a site sheds at, instead of sending one too many again and again', () => {
    // A site that answers 503 above 8 requests at once, and a task that allows 32.
    const site = (inFlight: number) => inFlight > 8;
    let s = hostCap(32);
    let shed = 0;
    let most = 0;
    // One answer every 10 ms for two minutes, with as many out as the cap allows.
    for (let at = 0; at < 120_000; at += 10) {
      const inFlight = s.cap;
      const throttled = site(inFlight);
      if (at >= 10_000) {
        shed += throttled ? 1 : 0;
        most = Math.max(most, inFlight);
      }
      s = afterAnswer(32, s, { at, ms: 20, throttled, inFlight }).state;
    }
    assert.equal(shed, 0, 'no 503 after the first ten seconds');
    assert.equal(most, 8, 'it keeps 8 out: as many as the site takes');
  });

  it('backs off a host that answers far slower than it did, never below one', () => {
    let s = afterAnswer(4, hostCap(4), { at: 0, ms: 40, throttled: false, inFlight: 4 }).state;
    const r = afterAnswer(4, s, { at: 5_000, ms: 900, throttled: false, inFlight: 4 });
    assert.equal(r.state.cap, 2);
    assert.match(r.reason!, /answered in 900 ms, 22\.5× its fastest: at most 2 request\(s\) at once \(was 4\)/);
    s = r.state;
    for (let t = 10_000; t < 20_000; t += 2_000)
      s = afterAnswer(4, s, { at: t, ms: 50, throttled: true, inFlight: 2 }).state;
    assert.equal(s.cap, 1);
  });

  it('holds a job until its host has a turn, and measures the answers', async () => {
    const lines: string[] = [];
    const t = new HostThrottles(2, (_l, m) => lines.push(m));
    const waits: number[] = [];
    const politeWait = (ms: number) => (waits.push(ms), new Promise<void>((r) => setImmediate(r)));
    const a = await t.turn('h', politeWait);
    await t.turn('h', politeWait);
    let third = false;
    const pending = t.turn('h', politeWait).then((r) => ((third = true), r));
    await new Promise((r) => setImmediate(r));
    assert.equal(third, false, 'two out: the third waits');
    a();
    (await pending)();
    assert.ok(waits.length > 0, 'it waited as for politeness');
    const direct: InSlot = (f) => f();
    await assert.rejects(
      t.measured(
        'h',
        direct,
      )(async () => {
        throw Object.assign(new Error('HTTP 503'), { status: 503 });
      }),
    );
    assert.equal(t.capOf('h'), 1);
    // One turn is still out (the second), so this 503 came with one request out.
    assert.deepEqual(lines, [
      'host h answered 429/503 with 1 request(s) out: at most 1 request(s) at once (was 2), fewer than 2 for 5 min',
    ]);
  });
});

describe('past one machine: health and readiness (issue 36)', () => {
  const state = (over: Partial<HealthState> = {}): HealthState => ({
    lastBeatAt: 100_000,
    lastReplyAt: 100_000,
    refusal: null,
    redisDownForMs: 0,
    running: true,
    draining: false,
    concurrency: 16,
    processed: 7,
    ...over,
  });
  it('is live while its heartbeats reach Redis, ready while it also runs and is not draining', () => {
    assert.deepEqual(healthAnswer(state(), true, 105_000), {
      status: 200,
      body: { live: true, ready: true, why: 'connected and working', concurrency: 16, processed: 7 },
    });
    assert.equal(healthAnswer(state({ draining: true }), true, 105_000).status, 503);
    assert.equal(healthAnswer(state({ draining: true }), false, 105_000).status, 200, 'draining is alive');
    assert.equal(
      healthAnswer(state({ draining: true }), true, 105_000).body.why,
      'draining: finishing its pages, taking no more',
    );
    // A connection that says it is up while Redis answers nothing (a half-open socket): a restart mends it.
    const stale = healthAnswer(state(), false, 100_000 + HEALTH_STALE_MS + 5_000);
    assert.equal(stale.status, 503);
    assert.equal(stale.body.why, 'connected, but Redis has answered no heartbeat for 35 s');
    assert.equal(
      healthAnswer(state({ lastBeatAt: null, running: false }), true, 0).body.why,
      'not connected to Redis yet',
    );
  });
  it('stays live while Redis is down or refuses, so the fleet is not restarted for what a restart cannot mend', () => {
    const at = 100_000 + HEALTH_STALE_MS + 10_000;
    const down = state({ redisDownForMs: 40_000 });
    assert.equal(healthAnswer(down, false, at).status, 200);
    assert.equal(healthAnswer(down, true, at).status, 503);
    assert.equal(
      healthAnswer(down, true, at).body.why,
      'Redis out of reach for 40 s: reconnecting (a restart would not bring it back)',
    );
    const refused = state({
      lastReplyAt: at - 2_000,
      refusal: "OOM command not allowed when used memory > 'maxmemory'.",
    });
    assert.equal(healthAnswer(refused, false, at).status, 200);
    assert.deepEqual(healthAnswer(refused, true, at).body, {
      live: true,
      ready: false,
      why: "Redis refuses the heartbeats (OOM command not allowed when used memory > 'maxmemory'.): none reached it for 40 s",
      concurrency: 16,
      processed: 7,
    });
    // A drain stops the heartbeats; it ends by itself, and killing it would lose its pages.
    assert.equal(healthAnswer(state({ draining: true }), false, at).status, 200);
    assert.equal(healthAnswer(state({ draining: true }), true, at).status, 503);
  });
  it('reads --health PORT or HOST:PORT and serves the probes over HTTP', async () => {
    assert.deepEqual(parseHealthAddress('8080'), { host: '0.0.0.0', port: 8080 });
    assert.deepEqual(parseHealthAddress('127.0.0.1:9'), { host: '127.0.0.1', port: 9 });
    assert.throws(() => parseHealthAddress('x'), /--health 'x': expected PORT or HOST:PORT/);
    let draining = false;
    const server = await serveHealth({ host: '127.0.0.1', port: 0 }, () =>
      state({ lastBeatAt: Date.now(), lastReplyAt: Date.now(), draining }),
    );
    try {
      const port = (server.address() as AddressInfo).port;
      const get = async (path: string) => {
        const res = await fetch(`http://127.0.0.1:${port}${path}`);
        return { status: res.status, body: (await res.json()) as { ready: boolean } };
      };
      assert.equal((await get('/readyz')).status, 200);
      draining = true;
      assert.deepEqual([(await get('/readyz')).status, (await get('/healthz')).status], [503, 200]);
    } finally {
      server.close();
    }
  });
});
