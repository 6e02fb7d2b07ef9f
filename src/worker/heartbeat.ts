import { hostname } from 'node:os';
import { performance } from 'node:perf_hooks';
import { WORKERS_KEY } from '../frontier/keys';
import type { AutoscaleBeat, WorkerBeat } from '../frontier/fleet';
import { isReplyError } from '../redis/check';
import type { Redis } from '../redis/connect';
import type { AppliedDecision } from './autoscale';
import { PARENT_PIPE_ENV } from './parentWatch';

// A worker's heartbeat (frontier/fleet.ts WorkerBeat): who it is, what it runs, how busy its loop is, what its
// autoscaler decided. The Workers view, the window's size and a supervisor's dead-worker release read it.

/** How often a worker beats. */
const BEAT_MS = 5_000;

export interface HeartbeatDeps {
  readonly redis: Redis;
  readonly id: string;
  readonly tasks: readonly string[];
  readonly started: number;
  readonly tally: { readonly processed: number; readonly failed: number };
  /** BullMQ Worker id -> the partition tag it consumes: a supervisor that sees this process die finds its jobs. */
  readonly bull: Readonly<Record<string, string>>;
  /** The worker's concurrency now. */
  readonly concurrency: () => number;
  /** An autoscaled worker's range, and where it starts. */
  readonly autoscale?: { readonly min: number; readonly max: number; readonly start: number };
  /** What the worker warns of now (WorkerBeat.warnings). */
  readonly warnings?: () => readonly string[];
}

export class Heartbeat {
  /** When a beat last reached Redis (the health probe's readiness). */
  lastBeatAt: number | null = null;
  /** When Redis last answered a beat, a refusal included (the health probe's liveness: the connection works). */
  lastReplyAt: number | null = null;
  /** Why Redis refused the last beat (an OOM under maxmemory, a read-only replica), or null when it took it. */
  refusal: string | null = null;
  private elu = performance.eventLoopUtilization();
  private eluAt = performance.now();
  private loopBusy = 0;
  private scale: AutoscaleBeat | undefined;
  private readonly supervised = process.env[PARENT_PIPE_ENV] === '1';
  private timer: NodeJS.Timeout | null = null;

  constructor(private readonly deps: HeartbeatDeps) {
    const a = deps.autoscale;
    this.scale = a ? { min: a.min, max: a.max, peak: a.start, last: null, now: null } : undefined;
  }

  async beat(): Promise<void> {
    // Over a few seconds at least: a beat sent at once after a decision must not report a blip.
    if (performance.now() - this.eluAt >= 2_000) {
      this.loopBusy = Math.round(performance.eventLoopUtilization(this.elu).utilization * 100) / 100;
      this.elu = performance.eventLoopUtilization();
      this.eluAt = performance.now();
    }
    const { id, redis, tally } = this.deps;
    const warnings = this.deps.warnings?.() ?? [];
    const info: WorkerBeat = {
      id,
      pid: process.pid,
      host: hostname(),
      tasks: [...this.deps.tasks],
      concurrency: this.deps.concurrency(),
      started: this.deps.started,
      lastSeen: Date.now(),
      processed: tally.processed,
      failed: tally.failed,
      bull: this.deps.bull,
      loopBusy: this.loopBusy,
      ...(this.scale ? { autoscale: this.scale } : {}),
      ...(this.supervised ? { parent: { pid: process.ppid, host: hostname() } } : {}),
      ...(warnings.length > 0 ? { warnings } : {}),
    };
    await redis.hset(WORKERS_KEY, id, JSON.stringify(info)).then(
      () => {
        this.lastBeatAt = this.lastReplyAt = Date.now();
        this.refusal = null;
      },
      (err: Error) => {
        // An error Redis answered with: the connection works, Redis said no. Any other (the connection's) is no answer.
        if (!isReplyError(err)) return;
        this.lastReplyAt = Date.now();
        this.refusal = err.message.split('\n')[0]!.slice(0, 120);
      },
    );
  }

  /** The autoscaler changed the concurrency: said at once, not at the next beat. */
  decided(d: AppliedDecision): void {
    this.scale = { ...this.scale!, peak: Math.max(this.scale!.peak, d.to), last: d };
    // The window (frontier/window.ts) follows the heartbeats' concurrency. A beat never rejects (a lost one is
    // followed by the next).
    void this.beat();
  }

  /** Why the autoscaler's concurrency is where it is, shown from the next beat. */
  judged(reason: string): void {
    this.scale = { ...this.scale!, now: reason };
  }

  start(): void {
    // A beat never rejects: one that does not reach Redis leaves lastBeatAt as it was.
    this.timer = setInterval(() => void this.beat(), BEAT_MS);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }
}
