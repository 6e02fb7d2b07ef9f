import type { Redis } from '../redis/connect';
import { compileRobots, type RobotsRules, type RobotsSource } from '../core/robots';
import { robotsKey } from './keys';

// robots.txt is fetched once per origin for the whole fleet: the first worker to need it takes a short lock and
// fetches; the others wait for the cached copy in Redis. Each process also keeps the compiled rules in memory, and
// shares a look-up under way: the jobs that start together on a new origin (a crawl's first pages) wait for the one
// look-up instead of each finding the lock taken and polling Redis for the copy.

const TTL_OK_S = 24 * 3600;
/** An unreachable robots.txt blocks the host; try it again soon rather than in a day. */
const TTL_UNREACHABLE_S = 60;
const LOCK_MS = 30_000;
const LOCAL_TTL_MS = 60_000;

export type RobotsFetcher = (origin: string) => Promise<RobotsSource>;

export class RobotsCache {
  private readonly local = new Map<string, { rules: RobotsRules; expires: number }>();
  private readonly pending = new Map<string, Promise<RobotsSource>>();

  constructor(
    private readonly redis: Redis,
    private readonly fetchRobots: RobotsFetcher,
  ) {}

  async rulesFor(origin: string, userAgent: string): Promise<RobotsRules> {
    const hit = this.local.get(origin);
    if (hit && hit.expires > Date.now()) return hit.rules;
    let lookup = this.pending.get(origin);
    if (!lookup) {
      lookup = this.source(origin).finally(() => this.pending.delete(origin));
      this.pending.set(origin, lookup);
    }
    const source = await lookup;
    const rules = compileRobots(origin, source, userAgent);
    this.local.set(origin, { rules, expires: Date.now() + LOCAL_TTL_MS });
    return rules;
  }

  private async source(origin: string): Promise<RobotsSource> {
    const key = robotsKey(origin);
    const deadline = Date.now() + LOCK_MS;
    for (;;) {
      const cached = await this.redis.get(key);
      if (cached) return JSON.parse(cached) as RobotsSource;
      const locked = await this.redis.set(`${key}:lock`, '1', 'PX', LOCK_MS, 'NX');
      if (locked === 'OK') {
        // The lock may be free because its holder has just stored the copy, after our GET missed: look again
        // before fetching (workers booting together each look the start origins up at once).
        const stored = await this.redis.get(key);
        if (stored) {
          await this.redis.del(`${key}:lock`);
          return JSON.parse(stored) as RobotsSource;
        }
      }
      if (locked === 'OK' || Date.now() > deadline) {
        const source = await this.fetchRobots(origin);
        const ttl = source.state === 'unreachable' ? TTL_UNREACHABLE_S : TTL_OK_S;
        // Two commands, not a MULTI: the copy and its lock are in different hash slots (CROSSSLOT on a cluster), and
        // a lock left behind only expires (LOCK_MS) while the copy is already there for everyone.
        await this.redis.set(key, JSON.stringify(source), 'EX', ttl);
        await this.redis.del(`${key}:lock`);
        return source;
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}
