import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { Redis } from '../redis/connect';
import { taskKeys } from './keys';
import { withScripts } from './scripts';

// Who drives a task's run. A run has one driver: the process that seeds it, watches it drain, stores its items
// and finalizes it (CrawlSession, from `crawl-studio run` or the editor's Start Crawl). A second driver of the
// same task used to resume the run silently (two stores racing for its items, a wrong row count) or, with
// --fresh, replace it under the first one's feet. The lease lets the second one find out and say so. Workers
// (`crawl-studio worker`) and writers join a run without a lease: any number of them is the design.

/** What a driver says about itself in the lease; no secrets, since any Redis client can read it. */
export interface LeaseHolder {
  readonly owner: string;
  /** 'crawl-studio run', 'VS Code' */
  readonly front: string;
  readonly host: string;
  readonly pid: number;
  readonly since: number;
}

export type LeaseResult =
  { readonly held: true } | { readonly held: false; readonly holder: LeaseHolder; readonly expiresInMs: number };

/** Long enough to ride out a slow poll or a Redis failover, short enough that a killed driver's lease is soon gone. */
const LEASE_TTL_MS = 15_000;

export class RunLease {
  private readonly key: string;
  private readonly holder: LeaseHolder;
  private readonly redis;
  private renewedAt = 0;

  constructor(
    redis: Redis,
    task: string,
    who: { front: string; host: string; pid: number },
    private readonly ttlMs = LEASE_TTL_MS,
  ) {
    this.redis = withScripts(redis);
    this.key = taskKeys(task).lease;
    this.holder = { owner: randomBytes(8).toString('hex'), ...who, since: Date.now() };
  }

  /**
   * Takes the lease, or says who holds it. `force` takes it anyway; `isGone(holder)` lets the caller declare a
   * holder dead (a process on this machine that no longer exists), whose lease is then taken at once rather
   * than after its TTL.
   */
  async acquire(force: boolean, isGone: (h: LeaseHolder) => boolean = () => false): Promise<LeaseResult> {
    const first = await this.call('acquire', force);
    if (first.held || force || !isGone(first.holder)) return first;
    return this.call('acquire', true);
  }

  /**
   * Keeps the lease; asks Redis at most a few times per TTL however often it is called. Not held: another driver
   * took it (`run --force`), and the result says who. `now` asks Redis whatever the last renewal: before an
   * act only the driver may do (finalizing the run).
   */
  async renew(now = false): Promise<LeaseResult> {
    if (!now && Date.now() - this.renewedAt < this.ttlMs / 5) return { held: true };
    return this.call('renew', false);
  }

  async release(): Promise<void> {
    await this.redis.csLease(this.key, 'release', this.holder.owner, '', this.ttlMs, '0');
  }

  private async call(op: 'acquire' | 'renew', force: boolean): Promise<LeaseResult> {
    const [ok, current, pttl] = await this.redis.csLease(
      this.key,
      op,
      this.holder.owner,
      JSON.stringify(this.holder),
      this.ttlMs,
      force ? '1' : '0',
    );
    if (ok === 1) {
      this.renewedAt = Date.now();
      return { held: true };
    }
    return { held: false, holder: JSON.parse(current!) as LeaseHolder, expiresInMs: Math.max(0, Number(pttl)) };
  }
}

/** The driver named by a task's lease, or null when there is none (released, or expired with its holder). */
export async function readLeaseHolder(redis: Redis, task: string): Promise<LeaseHolder | null> {
  const raw = await redis.get(taskKeys(task).lease);
  if (!raw) return null;
  try {
    return JSON.parse(raw) as LeaseHolder;
  } catch {
    return null;
  }
}

/**
 * A holder known dead: a process of this machine that no longer exists (its lease outlives it by up to the TTL).
 * A holder on another machine, or this very process, is never declared dead from here. The same test serves a
 * supervised worker's parent (frontier/fleet.ts WorkerBeat.parent).
 */
export function isHolderGone(h: Pick<LeaseHolder, 'host' | 'pid'>): boolean {
  if (h.host !== hostname() || h.pid === process.pid) return false;
  try {
    process.kill(h.pid, 0);
    return false;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ESRCH';
  }
}
