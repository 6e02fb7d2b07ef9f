import { readFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { monitorEventLoopDelay, performance, type EventLoopUtilization } from 'node:perf_hooks';
import {
  decide,
  initialState,
  type ConcurrencyLimits,
  type ConcurrencySample,
  type ConcurrencyState,
} from '../core/autoscale/concurrency';
import type { FetchSlots, SlotAnswer } from './fetchSlots';

// The measuring half of a worker's autoscaling: it samples what the pure controller (core/autoscale/concurrency.ts)
// decides on, about once a second, and applies the answer to the worker's request slots. Everything it reads is
// local or one short Redis read per window: the controller must cost nothing next to the pages.

/** How often the controller is asked (a window is judged only once it holds enough: see AUTOSCALE.minPages). */
const AUTOSCALE_TICK_MS = 1_000;

/** A decision that changed the concurrency, as the heartbeat publishes it (frontier/fleet.ts). */
export interface AppliedDecision {
  readonly at: number;
  readonly from: number;
  readonly to: number;
  readonly reason: string;
}

export interface AutoscalerDeps {
  readonly limits: ConcurrencyLimits;
  readonly start: number;
  /** Why `start` differs from the size the slots were made with, if it does (logged as the first decision). */
  readonly startReason?: string;
  /** Every task's request slots in this worker: they move together. */
  readonly slots: readonly FetchSlots[];
  /** Pages this worker finished so far. */
  readonly pagesDone: () => number;
  /** The most requests the waiting work keeps busy in this worker (frontier/demand.ts), or null. */
  readonly useful: () => Promise<number | null>;
  /** Whether every task of this worker is paused (its queue: Pause, or a stopped run). */
  readonly paused?: () => Promise<boolean>;
  /** One round trip to Redis. */
  readonly ping: () => Promise<unknown>;
  /** A manual resize asked for since the last call (fleet.ts takeResize), or null. */
  readonly manual: () => Promise<number | null>;
  /** Bytes in use against `memoryLimit` (the container's when the limit is its cgroup's). */
  readonly memoryUsed: () => number;
  readonly memoryLimit: number | null;
  readonly onDecision: (d: AppliedDecision, judgedReason: string) => void;
  /** Every judged window's reason, changed or not (the heartbeat shows why it is where it is). */
  readonly onJudged?: (reason: string, concurrency: number) => void;
  readonly log: (level: 'info' | 'warn' | 'error', message: string) => void;
}

export class ConcurrencyAutoscaler {
  private state: ConcurrencyState;
  private timer: NodeJS.Timeout | null = null;
  private readonly loopDelay = monitorEventLoopDelay({ resolution: 20 });
  private window: ReturnType<ConcurrencyAutoscaler['freshWindow']>;
  private answers: { count: number; throttled: number; latencies: number[] } = {
    count: 0,
    throttled: 0,
    latencies: [],
  };
  private ticking = false;

  constructor(private readonly deps: AutoscalerDeps) {
    this.state = initialState(deps.start);
    // Here, not as a field initializer: fields are set before the constructor's parameter properties.
    this.window = this.freshWindow();
    for (const s of deps.slots) s.onAnswer((a) => this.answer(s, a));
  }

  get concurrency(): number {
    return this.state.concurrency;
  }

  start(): void {
    const c = this.state.concurrency;
    const from = this.deps.slots[0]?.size ?? c;
    if (from !== c) {
      for (const s of this.deps.slots) s.resize(c);
      const reason = `concurrency ${from} → ${c}: ${this.deps.startReason ?? 'where autoscaling starts'}`;
      this.deps.onDecision({ at: Date.now(), from, to: c, reason }, reason);
    }
    this.loopDelay.enable();
    this.window = this.freshWindow();
    this.timer = setInterval(() => void this.tick(), AUTOSCALE_TICK_MS);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.loopDelay.disable();
  }

  private answer(slots: FetchSlots, a: SlotAnswer): void {
    // Only requests sent at the current size say anything about it.
    if (a.generation !== slots.currentGeneration() || !a.answered) return;
    this.answers.count++;
    if (a.throttled) this.answers.throttled++;
    else if (this.answers.latencies.length < 2_000) this.answers.latencies.push(a.ms);
  }

  private freshWindow() {
    return {
      at: performance.now(),
      // The most memory in use at any tick of the window (memoryRoom in core/autoscale/concurrency.ts).
      memoryPeak: 0,
      pages: this.deps.pagesDone(),
      used: this.deps.slots.reduce((n, s) => n + s.usedSlotMs(), 0),
      elu: performance.eventLoopUtilization(),
      cpu: cpuTimes(),
    };
  }

  private async tick(): Promise<void> {
    if (this.ticking) return;
    this.ticking = true;
    try {
      const manual = await this.deps.manual();
      const sample = await this.sample(manual);
      const d = decide(this.deps.limits, this.state, sample);
      if (!d.judged) return;
      const from = this.state.concurrency;
      this.state = d.state;
      this.window = this.freshWindow();
      this.answers = { count: 0, throttled: 0, latencies: [] };
      this.loopDelay.reset();
      if (d.concurrency !== from) {
        for (const s of this.deps.slots) s.resize(d.concurrency);
        this.deps.onDecision({ at: Date.now(), from, to: d.concurrency, reason: d.reason }, d.reason);
      }
      this.deps.onJudged?.(d.reason, d.concurrency);
    } catch (err) {
      this.deps.log('warn', `autoscaling: ${err instanceof Error ? err.message : String(err)}`);
    } finally {
      this.ticking = false;
    }
  }

  private async sample(manual: number | null): Promise<ConcurrencySample> {
    const w = this.window;
    const now = performance.now();
    const windowMs = now - w.at;
    const t0 = performance.now();
    const [useful, , paused] = await Promise.all([this.deps.useful(), this.deps.ping(), this.deps.paused?.() ?? false]);
    const redisMs = performance.now() - t0;
    const used = this.deps.slots.reduce((n, s) => n + s.usedSlotMs(), 0) - w.used;
    const size = this.deps.slots.reduce((n, s) => n + s.size, 0);
    const elu: EventLoopUtilization = performance.eventLoopUtilization(w.elu);
    const lat = this.answers.latencies.slice().sort((a, b) => a - b);
    const meanDelay = this.loopDelay.mean / 1e6;
    // Every tick reads memory, judged or not: the window's peak is over those readings.
    const memoryUsed = this.deps.memoryUsed();
    w.memoryPeak = Math.max(w.memoryPeak, memoryUsed);
    return {
      at: Date.now(),
      windowMs,
      pages: this.deps.pagesDone() - w.pages,
      busy: windowMs > 0 ? Math.min(1, used / (windowMs * Math.max(1, size))) : 0,
      loopBusy: elu.utilization,
      // Less the timer's own resolution, which the histogram counts as delay.
      loopDelayMs: Number.isFinite(meanDelay) ? Math.max(0, meanDelay - 20) : 0,
      machineCpu: cpuShare(w.cpu, cpuTimes()),
      memory: { used: memoryUsed, limit: this.deps.memoryLimit, peak: w.memoryPeak },
      redisMs,
      sites: {
        answered: this.answers.count,
        throttled: this.answers.throttled,
        latencyMs: lat.length > 0 ? lat[Math.floor(lat.length / 2)]! : null,
      },
      useful,
      ...(paused ? { paused } : {}),
      ...(manual !== null ? { manual } : {}),
    };
  }
}

/** The machine's CPU time so far, busy and in all (ms, summed over cores): two readings give its load between them. */
export function cpuTimes(): { busy: number; total: number } {
  let busy = 0;
  let total = 0;
  for (const c of cpus()) {
    const t = c.times;
    const all = t.user + t.nice + t.sys + t.idle + t.irq;
    total += all;
    busy += all - t.idle;
  }
  return { busy, total };
}

function cpuShare(a: { busy: number; total: number }, b: { busy: number; total: number }): number | null {
  const total = b.total - a.total;
  return total > 0 ? Math.min(1, Math.max(0, (b.busy - a.busy) / total)) : null;
}

/**
 * The memory limit this worker lives under: the cgroup's (a container's, `memory.max`, v2) when it has one, else
 * `maxMemory` (--max-memory), else none. With both, the smaller. What is measured against it is the cgroup's own
 * use (`memory.current`: every process of the container) when the limit is the cgroup's.
 */
export function memoryLimit(
  maxMemory: number | undefined,
  own: () => number,
  root = '/sys/fs/cgroup',
): { limit: number | null; used: () => number } {
  const cg = readNumber(`${root}/memory.max`);
  if (cg !== null && (maxMemory === undefined || cg <= maxMemory)) {
    return { limit: cg, used: () => readNumber(`${root}/memory.current`) ?? own() };
  }
  return { limit: maxMemory ?? null, used: own };
}

function readNumber(file: string): number | null {
  try {
    const text = readFileSync(file, 'utf8').trim();
    // "max": no limit.
    const n = Number(text);
    return text !== '' && Number.isFinite(n) && n > 0 ? n : null;
  } catch {
    return null;
  }
}
