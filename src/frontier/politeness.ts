import type { Redis } from '../redis/connect';
import { hostKeys } from './keys';
import { withScripts, type CrawlScripts } from './scripts';

// Per-host politeness across the whole fleet (see lua/politeness.lua). A lease expires by itself, so a worker
// killed mid-request frees its slot after `leaseMs` without anybody cleaning up; sooner when the supervisor that saw
// it die releases its leases (frontier/fleet.ts).

export interface HostLimits {
  readonly concurrency: number;
  readonly delayMs: number;
  /** How long a slot is held at most: the request timeout plus a margin. */
  readonly leaseMs: number;
}

export type GateAnswer = { readonly ok: true } | { readonly ok: false; readonly waitMs: number };

export class HostGate {
  private readonly redis: Redis & CrawlScripts;

  constructor(redis: Redis) {
    this.redis = withScripts(redis);
  }

  /**
   * A request slot on `host` now, or when to ask again. With `promiseId` (one per page, stable across its tries:
   * "<task>|<job id>") a page that must wait for the host's delay is promised a start of its own, in order, and
   * should be set aside until then rather than wait holding a job (see lua/politeness.lua).
   */
  async acquire(host: string, limits: HostLimits, token: string, promiseId = ''): Promise<GateAnswer> {
    const k = hostKeys(host);
    const [ok, wait] = await this.redis.csPoliteness(
      k.next,
      k.active,
      k.horizon,
      k.promises,
      k.sending,
      limits.delayMs,
      limits.concurrency,
      token,
      limits.leaseMs,
      promiseId,
    );
    return ok === 1 ? { ok: true } : { ok: false, waitMs: wait };
  }

  /** The task-wide sliding-window rate limit: 0 to go now, else ms to wait. */
  async rateLimit(key: string, max: number, perMs: number, token: string): Promise<number> {
    return this.redis.csRateLimit(key, max, perMs, token);
  }

  /**
   * The request of a grant (`token`) is on the wire: the host's delay runs from now, and the next grant may come
   * (lua/sent.lua). Called where the request's headers were written (worker/sendWatch.ts) for a host with a delay.
   */
  async sent(host: string, token: string, delayMs: number): Promise<void> {
    const k = hostKeys(host);
    await this.redis.csSent(k.next, k.horizon, k.sending, delayMs, token);
  }

  async release(host: string, token: string): Promise<void> {
    await this.redis.zrem(hostKeys(host).active, token);
  }

  /**
   * Frees every lease on `host` whose token starts with `prefix`: those of a worker known to be dead, which would
   * otherwise hold the host's slots until they expire (the request timeout plus 5 s). Resolves with how many.
   */
  async releaseAll(host: string, prefix: string): Promise<number> {
    const k = hostKeys(host);
    // A grant of the dead worker not said sent holds the host until it expires: free it too. Its request may have
    // gone out just before the kill, so the host's delay runs from now, as if it was sent now (the mark is
    // "<token>|<delay>", politeness.lua): spaced from the grant, the next request went out 195 ms after it (issue 35).
    const sending = await this.redis.get(k.sending);
    if (sending?.startsWith(prefix)) {
      const bar = sending.lastIndexOf('|');
      await this.redis.csSent(
        k.next,
        k.horizon,
        k.sending,
        bar < 0 ? 0 : Number(sending.slice(bar + 1)) || 0,
        bar < 0 ? sending : sending.slice(0, bar),
      );
    }
    const mine = (await this.redis.zrange(k.active, 0, -1)).filter((t) => t.startsWith(prefix));
    return mine.length > 0 ? this.redis.zrem(k.active, ...mine) : 0;
  }
}
