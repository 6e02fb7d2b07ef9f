import { cpus } from 'node:os';
import type { Redis } from '../redis/connect';
import { decideWorkers, type ProcessState } from '../core/autoscale/processes';
import { readLiveWorkers, recordProcessScale, workerIdOf } from '../frontier/fleet';
import { readDemand } from '../frontier/demand';
import { taskKeys } from '../frontier/keys';
import type { CrawlQueue } from '../frontier/crawl';
import type { WorkerSupervisor } from './supervisor';
import { cpuTimes } from '../worker/autoscale';

// `run --workers auto|MIN..MAX`: starts and stops local worker processes on what the pure decision
// (core/autoscale/processes.ts) reads: each worker's event-loop load from its heartbeat, the machine's CPU, the
// pages waiting. Each change is recorded in Redis with its reason (`status` shows it) and told to `log`.

const TICK_MS = 2_000;

export class ProcessScaler {
  private timer: NodeJS.Timeout | null = null;
  private state: ProcessState;
  private cpu = cpuTimes();
  private busy = false;

  constructor(
    private readonly supervisor: WorkerSupervisor,
    private readonly redis: Redis,
    private readonly crawl: CrawlQueue,
    private readonly limits: { readonly min: number; readonly max: number },
    private readonly log: (message: string) => void,
  ) {
    this.state = { workers: limits.min, settleUntil: 0 };
  }

  start(): void {
    this.supervisor.start(this.limits.min);
    this.state = { workers: this.limits.min, settleUntil: Date.now() + 10_000 };
    this.timer = setInterval(() => void this.tick(), TICK_MS);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  private async tick(): Promise<void> {
    if (this.busy || !this.timer) return;
    this.busy = true;
    try {
      const local = this.supervisor.list();
      const ids = new Set(local.map((w) => workerIdOf(w.pid)));
      const [beats, demand, paused] = await Promise.all([
        readLiveWorkers(this.redis),
        readDemand(
          this.redis,
          this.crawl.partitions().map((p) => p.keys.frontier),
        ),
        this.redis.hexists(taskKeys(this.crawl.taskName).bull.meta, 'paused'),
      ]);
      const mine = beats.filter((b) => ids.has(b.id));
      const fleet = beats.filter((b) => b.tasks.includes(this.crawl.taskName));
      const now = cpuTimes();
      const total = now.total - this.cpu.total;
      const machineCpu = total > 0 ? (now.busy - this.cpu.busy) / total : 0;
      this.cpu = now;
      const d = decideWorkers(
        this.limits,
        { ...this.state, workers: local.length },
        {
          at: Date.now(),
          loopBusy: mine.flatMap((b) => (typeof b.loopBusy === 'number' ? [b.loopBusy] : [])),
          machineCpu,
          cores: cpus().length,
          waitingPages: demand.pages,
          fleetConcurrency: fleet.reduce((n, b) => n + b.concurrency, 0),
          paused: paused === 1,
        },
      );
      this.state = d.state;
      if (d.workers === local.length || !this.timer) return;
      if (d.workers > local.length) this.supervisor.start(d.workers - local.length);
      else {
        // The newest first: the oldest have warm connections and caches.
        const newest = [...local].sort((a, b) => b.startedAt - a.startedAt).slice(0, local.length - d.workers);
        for (const w of newest) void this.supervisor.stopOne(w.pid);
      }
      this.log(d.reason);
      await recordProcessScale(this.redis, this.crawl.taskName, {
        at: Date.now(),
        from: local.length,
        to: d.workers,
        min: this.limits.min,
        max: this.limits.max,
        reason: d.reason,
      });
    } catch (err) {
      this.log(`autoscaling workers: ${err instanceof Error ? err.message : String(err)}`);
    } finally {
      this.busy = false;
    }
  }
}
