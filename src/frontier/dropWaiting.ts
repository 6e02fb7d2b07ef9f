import type { Redis } from '../redis/connect';
import type { FrontierKeys } from './keys';
import { withScripts } from './scripts';

/** Hosts whose waiting pages one lua/dropWaiting.lua call drops. */
const DROP_HOSTS = 500;

/**
 * Drops the pages waiting in one partition's frontier `f` (the Queue Explorer's Drain), a few hundred hosts per atomic
 * call, so a crawl going on meanwhile keeps its counters true. Its run marker and its window stay: the window's pages
 * settle as their jobs end, and the pages those jobs discover are queued as usual. How many pages were dropped.
 */
export async function dropWaiting(redis: Redis, f: FrontierKeys, opts: { counted: boolean }): Promise<number> {
  const scripts = withScripts(redis);
  let dropped = 0;
  for (const band of await redis.zrange(f.bands, 0, -1)) {
    for (;;) {
      const [n, left] = await scripts.csDropWaiting(f.meta, f.prefix, band, DROP_HOSTS, opts.counted ? '1' : '0');
      dropped += n;
      if (left === 0) break;
    }
  }
  return dropped;
}
