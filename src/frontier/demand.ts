import type { Redis } from '../redis/connect';
import type { FrontierKeys } from './keys';

// How much work a task has for its workers right now, as the autoscaler (worker/autoscale.ts) needs it: pages waiting
// in the compact frontier and in the window, and the hosts they belong to. A host takes at most its per-host
// concurrency of requests at once, so 3 hosts with 1,000 pages each keep at most 3 × that busy, however many pages.

export interface Demand {
  /** Pages waiting in the frontier plus pages in the window (BullMQ jobs, in flight or about to be). */
  readonly pages: number;
  /** Hosts with pages waiting or in the window (an upper bound: a host in both is counted twice). */
  readonly hosts: number;
}

/** The demand over the given partitions' frontiers: a few commands per partition, in one round trip. */
export async function readDemand(redis: Redis, frontiers: readonly FrontierKeys[]): Promise<Demand> {
  const parts = await Promise.all(
    frontiers.map(async (f) => {
      const [n, transit, inWindowHosts, bands] = await Promise.all([
        redis.hget(f.meta, 'n'),
        redis.hlen(f.transit),
        redis.hlen(f.win),
        redis.zrange(f.bands, 0, -1),
      ]);
      const ready = await Promise.all(bands.map((b) => redis.zcard(f.ready(b))));
      return { pages: Number(n ?? 0) + transit, hosts: inWindowHosts + ready.reduce((a, b) => a + b, 0) };
    }),
  );
  return { pages: parts.reduce((a, p) => a + p.pages, 0), hosts: parts.reduce((a, p) => a + p.hosts, 0) };
}

/**
 * The most requests `demand` can keep in flight in one worker of `workers` (its share, or what the others leave
 * unused), each host allowing `perHost` at once.
 */
export function usefulRequests(demand: Demand, perHost: number, othersConcurrency: number, workers: number): number {
  const fleet = Math.min(demand.pages, demand.hosts * perHost);
  return Math.max(Math.ceil(fleet / Math.max(1, workers)), fleet - othersConcurrency);
}
