// The autoscaler of a worker's concurrency (its requests in flight): pure, so every decision can be replayed from
// its inputs in a test. The worker (worker/autoscale.ts) measures, calls decide() about once a second, applies the
// answer and logs it with its reason.
//
// What it scales on, and why this way (issue 36):
// - Measured throughput, not a schedule. Crawlee's AutoscaledPool steps 5% every 10 s (about 10 minutes from 1 to
//   200); here a window that proved useful doubles while a doubling gives ≥ 25% more pages/s, then moves in small
//   steps that must each pay for themselves (the proposal for Crawlee's Python port).
// - The sites: 429 and 503 answers to requests sent at the current concurrency bring it back to the last level
//   that drew none (or halve it), and it stays under the level that drew them for a while, as Scrapy's
//   AutoThrottle backs off. Rising latency is a back-off too. The task's politeness limits stay enforced by the
//   host gate whatever this decides.
// - The machine: a saturated event loop (its delay, its utilisation: a worker CPU-bound on its core), the memory
//   limit (the container's, which Crawlee ignores and gets OOM-killed by), Redis's latency.
// - The work: no growth past what the waiting pages and their hosts' limits can keep busy, nor while the slots
//   are not full (something else is the limit).
// - A manual resize holds (Celery's autoscaler undoes them).

import { formatBytes } from '../units';

export interface ConcurrencyLimits {
  readonly min: number;
  readonly max: number;
}

/** What the worker measured over one window (since its last decision). */
export interface ConcurrencySample {
  /** When the window ended (ms, any clock the caller keeps consistently). */
  readonly at: number;
  readonly windowMs: number;
  /** Pages finished in the window. */
  readonly pages: number;
  /** Mean share of the request slots in use over the window, 0..1. */
  readonly busy: number;
  /** Share of the window the event loop was busy (its utilisation), 0..1: ~1 is a worker CPU-bound on its core. */
  readonly loopBusy: number;
  /** Mean event-loop delay (ms): how late timers and I/O callbacks run. */
  readonly loopDelayMs: number;
  /** Share of the machine's CPU in use, 0..1, when known. */
  readonly machineCpu: number | null;
  /**
   * Bytes this process (with its browsers) uses, and the limit (a cgroup's memory.max, --max-memory), if any; `peak`:
   * the most it used at any reading of the window (absent: `used`).
   */
  readonly memory: { readonly used: number; readonly limit: number | null; readonly peak?: number };
  /** A round trip to Redis (ms), when measured. */
  readonly redisMs: number | null;
  /**
   * The sites' answers to requests sent at the current concurrency: how many, how many were 429/503, and their
   * median time to answer (ms, null when none).
   */
  readonly sites: { readonly answered: number; readonly throttled: number; readonly latencyMs: number | null };
  /** Most requests the waiting work could keep in flight (pages waiting, their hosts' limits); null: unknown. */
  readonly useful: number | null;
  /** A resize the user asked for since the last decision. */
  readonly manual?: number;
  /**
   * Every task the worker serves is paused (Pause, or Stop): nothing can be taken, so the window says nothing of
   * the sites or the machine. Judged as such, a move made just before the pause read as one that gave 0 pages/s.
   */
  readonly paused?: boolean;
}

export interface ConcurrencyState {
  readonly concurrency: number;
  /** The last move and the pages/s measured before it, to judge whether it paid. */
  readonly last: { readonly from: number; readonly to: number; readonly rateBefore: number } | null;
  readonly phase: 'double' | 'probe';
  /** No growth probe before this (a plateau was found, or after a back-off). */
  readonly quietUntil: number;
  /** A level the sites pushed back at: no growth to it or above before `until`. */
  readonly ceiling: { readonly n: number; readonly until: number } | null;
  /** Highest level that ran a window with no 429/503. */
  readonly lastGood: number | null;
  /** The sites' answer time when they were least loaded (ms). */
  readonly baselineLatencyMs: number | null;
  /** A manual resize holds until then. */
  readonly heldUntil: number;
}

export interface ConcurrencyDecision {
  readonly state: ConcurrencyState;
  /** The concurrency to run at from now. */
  readonly concurrency: number;
  /** Whether the window was used (false: too few pages yet to judge; sample again later, over a longer window). */
  readonly judged: boolean;
  /** Why, for people: "concurrency 16 → 32: 80 pages/s at 16, CPU 35%, sites answering in 205 ms". */
  readonly reason: string;
}

/** The knobs, named so the tests and the docs say the same numbers. */
export const AUTOSCALE = {
  /** A window is judged once it saw this many pages and lasted `minWindowMs`, or after `maxWindowMs`. */
  minPages: 20,
  minWindowMs: 2_000,
  maxWindowMs: 10_000,
  /** The share of 429/503 answers that backs the whole worker off (fewer are left to the per-host back-off). */
  throttledShare: 0.05,
  /** 429/503 answers that are judged at once, whatever the window. */
  throttledNow: 3,
  /** A doubling must bring this much more pages/s to double again. */
  doublingGain: 1.25,
  /** A small step must bring this much more. */
  stepGain: 1.04,
  /** A move that made pages/s fall below this share of before is undone. */
  worse: 0.95,
  /** A small step: this share of the concurrency, at least 1. */
  step: 0.125,
  /** After a plateau or a back-off, no growth probe for this long. */
  quietMs: 15_000,
  /** How long a level the sites pushed back at stays out of reach. */
  ceilingMs: 300_000,
  /** A manual resize holds this long. */
  manualHoldMs: 600_000,
  /** Slots must be this full for more of them to help (unless the machine is saturated, see `machineSaturated`). */
  busyToGrow: 0.75,
  /**
   * The machine's CPU this busy: answer times (the sites', Redis's) then measure this machine's wait for a core as much
   * as theirs, and the slots stand empty while fetched pages wait for the CPU. Neither is a reason to back off or not
   * to probe; measured pages/s decides (bench, 2,202 pages on a saturated 2-core machine: 1 × 32 ran 84 pages/s,
   * 1 × 16 52-61, and the answer-time back-offs took auto from 16 down to 9).
   */
  machineSaturated: 0.9,
  loopBusyHold: 0.9,
  loopDelayBackOffMs: 250,
  memoryHold: 0.8,
  memoryBackOff: 0.9,
  redisHoldMs: 100,
  redisBackOffMs: 500,
  /** Sites answering this many times slower than their baseline (and `latencySlackMs` more) are overloaded. */
  latencyBackOff: 3,
  latencySlackMs: 50,
} as const;

export function initialState(concurrency: number): ConcurrencyState {
  return {
    concurrency,
    last: null,
    phase: 'double',
    quietUntil: 0,
    ceiling: null,
    lastGood: null,
    baselineLatencyMs: null,
    heldUntil: 0,
  };
}

/** Whether a window has enough in it to be judged (see AUTOSCALE.minPages). */
function ripe(s: Pick<ConcurrencySample, 'windowMs' | 'pages' | 'sites' | 'manual' | 'memory'>): boolean {
  if (s.manual !== undefined) return true;
  if (s.sites.throttled >= AUTOSCALE.throttledNow) return true;
  // Memory near its limit is judged at once: a rendered page costs tens of MB, and the OOM killer does not wait for 20.
  if (memoryPressed(s)) return true;
  if (s.windowMs >= AUTOSCALE.maxWindowMs) return true;
  return s.windowMs >= AUTOSCALE.minWindowMs && s.pages >= AUTOSCALE.minPages;
}

/** The concurrency to run at after a window, and why. */
export function decide(limits: ConcurrencyLimits, state: ConcurrencyState, s: ConcurrencySample): ConcurrencyDecision {
  const c = state.concurrency;
  if (s.manual !== undefined) return resizedByHand(limits, state, s.at, s.manual);
  // A new window once resumed; the move before the pause is not judged on a window it could not show.
  if (s.paused)
    return stay({ ...state, last: null }, 'paused: no page of its tasks can be taken (Pause, or Stop), nothing judged');
  if (!ripe(s))
    return { state, concurrency: c, judged: false, reason: `measuring: ${s.pages} page(s) in ${seconds(s.windowMs)}` };
  const rate = (s.pages * 1000) / Math.max(1, s.windowMs);
  const conditions = describe(s, rate, c);
  // A share of the answers, not any one: one shedding host among many is backed off per host (hostThrottle.ts).
  const throttled = s.sites.throttled > 0 && s.sites.throttled >= AUTOSCALE.throttledShare * s.sites.answered;
  const base = afterWindow(state, s, throttled);
  if (s.at < state.heldUntil)
    return stay(base, `held at ${c} after a manual resize (${seconds(state.heldUntil - s.at)} left): ${conditions}`);
  // Pressure first: a back-off is never held up by anything else.
  const backOff = backOffDecision(limits, base, s, throttled, conditions);
  if (backOff) return backOff;
  const verdict = lastMoveVerdict(base, s.at, rate, conditions);
  if ('decision' in verdict) return verdict.decision;
  return growth(limits, base, s, rate, verdict.phase, conditions);
}

function clamp(limits: ConcurrencyLimits, n: number): number {
  return Math.min(limits.max, Math.max(limits.min, Math.round(n)));
}

/** A resize by hand: taken as asked (within the limits) and held there for a while. */
function resizedByHand(
  limits: ConcurrencyLimits,
  state: ConcurrencyState,
  at: number,
  manual: number,
): ConcurrencyDecision {
  const to = clamp(limits, manual);
  const next: ConcurrencyState = {
    ...initialState(to),
    ceiling: state.ceiling,
    baselineLatencyMs: state.baselineLatencyMs,
    heldUntil: at + AUTOSCALE.manualHoldMs,
  };
  return move(
    next,
    state.concurrency,
    to,
    `resized by hand${to !== manual ? ` (asked ${manual}, kept within ${limits.min}..${limits.max})` : ''}; held for ${AUTOSCALE.manualHoldMs / 60_000} min`,
  );
}

/** What a judged window teaches: the sites' best latency, the last concurrency that was not throttled; a ceiling expires. */
function afterWindow(state: ConcurrencyState, s: ConcurrencySample, throttled: boolean): ConcurrencyState {
  const baselineLatencyMs =
    s.sites.latencyMs === null || throttled
      ? state.baselineLatencyMs
      : state.baselineLatencyMs === null
        ? s.sites.latencyMs
        : Math.min(state.baselineLatencyMs, s.sites.latencyMs);
  const lastGood = throttled ? state.lastGood : Math.max(state.lastGood ?? 0, state.concurrency);
  return {
    ...state,
    baselineLatencyMs,
    lastGood,
    ceiling: state.ceiling && state.ceiling.until > s.at ? state.ceiling : null,
  };
}

/** Down at once when the sites throttle (under a ceiling for a while) or something is under pressure; else null. */
function backOffDecision(
  limits: ConcurrencyLimits,
  base: ConcurrencyState,
  s: ConcurrencySample,
  throttled: boolean,
  conditions: string,
): ConcurrencyDecision | null {
  const c = base.concurrency;
  const settle = { phase: 'probe', last: null, quietUntil: s.at + AUTOSCALE.quietMs } as const;
  if (throttled) {
    const to = clamp(limits, base.lastGood !== null && base.lastGood < c ? base.lastGood : c / 2);
    const ceiling = { n: c, until: s.at + AUTOSCALE.ceilingMs };
    const why = `sites answered 429/503 to ${s.sites.throttled} of ${s.sites.answered} request(s) at ${c}`;
    return move({ ...base, ceiling, ...settle }, c, to, `${why}; ${conditions}`);
  }
  const pressure = backOffReason(s, base);
  if (!pressure) return null;
  // Memory halves: a quarter off 16 leaves a browser's open pages as they were (it opens 4 at most, worker/runtime.ts).
  const down = memoryPressed(s) ? c / 2 : c * 0.75;
  return move({ ...base, ...settle }, c, clamp(limits, Math.min(c - 1, down)), `${pressure}; ${conditions}`);
}

/** Did the last move up pay? Undone or ended when not (a decision); else the phase growth goes on in. */
function lastMoveVerdict(
  base: ConcurrencyState,
  at: number,
  rate: number,
  conditions: string,
): { readonly decision: ConcurrencyDecision } | { readonly phase: ConcurrencyState['phase'] } {
  const c = base.concurrency;
  const last = base.last;
  if (!last || last.to !== c) return { phase: base.phase };
  if (last.from > c) return { phase: 'probe' };
  if (last.from === c) return { phase: base.phase };
  const gain = rate / Math.max(1e-9, last.rateBefore);
  const wanted = base.phase === 'double' ? AUTOSCALE.doublingGain : AUTOSCALE.stepGain;
  if (gain >= wanted) return { phase: base.phase };
  const settled: ConcurrencyState = { ...base, phase: 'probe', last: null, quietUntil: at + AUTOSCALE.quietMs };
  // A move that did not pay is undone: more requests in flight for nothing are load on the sites for nothing. A
  // doubling that paid a little is kept, and small steps take over.
  const paidLittle = base.phase === 'double' && gain >= AUTOSCALE.stepGain;
  if (paidLittle)
    return {
      decision: stay(settled, `plateau: ${c} gave ${pct(gain - 1)} more pages/s than ${last.from}; ${conditions}`),
    };
  const why =
    gain < AUTOSCALE.worse
      ? `less than ${fmtRate(last.rateBefore)} at ${last.from}`
      : `no more than ${fmtRate(last.rateBefore)} at ${last.from}`;
  return { decision: move(settled, c, last.from, `${c} gave ${fmtRate(rate)} pages/s, ${why}; ${conditions}`) };
}

/** Up by doubling or a step, unless something holds growth; never to a ceiling, nor past the pages waiting. */
function growth(
  limits: ConcurrencyLimits,
  base: ConcurrencyState,
  s: ConcurrencySample,
  rate: number,
  phase: ConcurrencyState['phase'],
  conditions: string,
): ConcurrencyDecision {
  const c = base.concurrency;
  const hold = growthHold(s, base, limits, rate);
  if (hold) return stay({ ...base, last: null }, `${hold}; ${conditions}`);
  const up = phase === 'double' ? c * 2 : c + Math.max(1, Math.round(c * AUTOSCALE.step));
  let to = clamp(limits, up);
  if (base.ceiling) to = Math.min(to, base.ceiling.n - 1);
  if (s.useful !== null) to = Math.min(to, Math.max(c, s.useful));
  const room = memoryRoom(s, c);
  if (room !== null && room < to) {
    if (room <= c)
      return stay(
        { ...base, last: null },
        `no growth: memory at ${c + 1} would pass its back-off share; ${conditions}`,
      );
    to = room;
  }
  if (to <= c) return stay({ ...base, last: null }, `at ${c}: ${conditions}`);
  return move({ ...base, phase, last: { from: c, to, rateBefore: rate } }, c, to, conditions);
}

/** Whether this machine's CPU is saturated (see AUTOSCALE.machineSaturated). */
function saturated(s: ConcurrencySample): boolean {
  return s.machineCpu !== null && s.machineCpu >= AUTOSCALE.machineSaturated;
}

/**
 * The most requests memory leaves room for: what each costs so far (all in use ÷ requests, more than one costs, as the
 * browser's own share counts in it) times as many as fit under the back-off share. A doubling from 2 to 4 rendered
 * pages took a worker from 62% of its limit to 99% (issue 36): the hold at `memoryHold` alone does not see that coming.
 * What each costs is read at the window's peak: a rendered page's memory comes and goes as it loads and closes, and a
 * reading between two pages made room for a third that took a worker from 653 MB to 1.27 GB of its 1.2 GB limit.
 */
function memoryRoom(s: ConcurrencySample, c: number): number | null {
  const used = Math.max(s.memory.used, s.memory.peak ?? 0);
  if (s.memory.limit === null || used <= 0) return null;
  return Math.floor((c * AUTOSCALE.memoryBackOff * s.memory.limit) / used);
}

/** Memory at the back-off share of its limit. */
function memoryPressed(s: Pick<ConcurrencySample, 'memory'>): boolean {
  return s.memory.limit !== null && s.memory.used >= AUTOSCALE.memoryBackOff * s.memory.limit;
}

/** A reason to bring concurrency down now, if any. */
function backOffReason(s: ConcurrencySample, state: ConcurrencyState): string | null {
  if (memoryPressed(s)) return `memory ${formatBytes(s.memory.used)} of the ${formatBytes(s.memory.limit ?? 0)} limit`;
  if (s.loopDelayMs >= AUTOSCALE.loopDelayBackOffMs) return `event loop ${Math.round(s.loopDelayMs)} ms late`;
  if (saturated(s)) return null;
  if (s.redisMs !== null && s.redisMs >= AUTOSCALE.redisBackOffMs)
    return `Redis answering in ${Math.round(s.redisMs)} ms`;
  const base = state.baselineLatencyMs;
  if (
    base !== null &&
    s.sites.latencyMs !== null &&
    s.sites.latencyMs >= AUTOSCALE.latencyBackOff * base + AUTOSCALE.latencySlackMs
  ) {
    return `sites answering in ${Math.round(s.sites.latencyMs)} ms, ${(s.sites.latencyMs / Math.max(1, base)).toFixed(1)}× the ${Math.round(base)} ms they started at`;
  }
  return null;
}

/** A reason not to grow now, if any. */
function growthHold(
  s: ConcurrencySample,
  state: ConcurrencyState,
  limits: ConcurrencyLimits,
  rate: number,
): string | null {
  const c = state.concurrency;
  if (c >= limits.max) return `at the maximum ${limits.max}`;
  if (state.ceiling && c + 1 >= state.ceiling.n)
    return `kept under ${state.ceiling.n}, where the sites answered 429/503 (${seconds(state.ceiling.until - s.at)} more)`;
  if (s.at < state.quietUntil) return `settling (${seconds(state.quietUntil - s.at)} before the next probe)`;
  if (s.useful !== null && s.useful <= c)
    return `no growth: the waiting pages keep at most ${s.useful} request(s) busy`;
  if (s.busy < AUTOSCALE.busyToGrow && !saturated(s))
    return `no growth: slots ${pct(s.busy)} busy, something else limits the crawl`;
  if (s.memory.limit !== null && s.memory.used >= AUTOSCALE.memoryHold * s.memory.limit)
    return `no growth: memory ${formatBytes(s.memory.used)} of ${formatBytes(s.memory.limit)}`;
  if (s.loopBusy >= AUTOSCALE.loopBusyHold)
    return `no growth: this worker is CPU-bound (event loop ${pct(s.loopBusy)} busy)`;
  if (s.redisMs !== null && s.redisMs >= AUTOSCALE.redisHoldMs && !saturated(s))
    return `no growth: Redis answering in ${Math.round(s.redisMs)} ms`;
  if (rate === 0) return 'no growth: no page finished';
  return null;
}

/** The window's conditions, for the reason: "42 pages/s at 16, CPU 55%, sites answering in 40 ms". */
export function describe(s: ConcurrencySample, rate: number, c: number): string {
  const parts = [`${fmtRate(rate)} pages/s at ${c}`];
  if (s.machineCpu !== null) parts.push(`CPU ${pct(s.machineCpu)}`);
  parts.push(`event loop ${pct(s.loopBusy)} busy`);
  if (s.memory.limit !== null) parts.push(`memory ${formatBytes(s.memory.used)} of ${formatBytes(s.memory.limit)}`);
  if (s.redisMs !== null) parts.push(`Redis ${fmtMs(s.redisMs)}`);
  if (s.sites.latencyMs !== null) parts.push(`sites answering in ${fmtMs(s.sites.latencyMs)}`);
  return parts.join(', ');
}

function move(state: ConcurrencyState, from: number, to: number, why: string): ConcurrencyDecision {
  const next = { ...state, concurrency: to };
  return {
    state: next,
    concurrency: to,
    judged: true,
    reason: from === to ? `concurrency stays ${to}: ${why}` : `concurrency ${from} → ${to}: ${why}`,
  };
}

function stay(state: ConcurrencyState, why: string): ConcurrencyDecision {
  return {
    state,
    concurrency: state.concurrency,
    judged: true,
    reason: `concurrency stays ${state.concurrency}: ${why}`,
  };
}

function pct(x: number): string {
  return `${Math.round(x * 100)}%`;
}

function fmtRate(r: number): string {
  return r >= 10 ? String(Math.round(r)) : r.toFixed(1);
}

function fmtMs(ms: number): string {
  return ms >= 10 ? `${Math.round(ms)} ms` : `${ms.toFixed(1)} ms`;
}

function seconds(ms: number): string {
  return `${Math.max(0, Math.round(ms / 1000))} s`;
}
