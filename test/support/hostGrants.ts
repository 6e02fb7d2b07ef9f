import { Redis } from 'ioredis';

// The starts the per-host gate granted, by Redis's own clock, read where politeness is kept. A grant with a delay
// (lua/politeness.lua) sets the host's next start to now + delay, then marks the host as sending; no other grant is
// made until the request is on the wire (lua/sent.lua), which moves the next start to then + delay. So consecutive
// grants of a host are at least its delay apart. Arrival times at a test's site carry the delays of a loaded
// machine's event loops (the test's and the worker's), and tests that judged them needed tolerances.

const SENDING = /^(.+):\{host:(.+)\}:sending$/;

export interface HostGrants {
  /** Grant times (ms, Redis TIME) by host (`127.0.0.1:8080`), in the order granted. */
  readonly byHost: ReadonlyMap<string, readonly number[]>;
  stop(): Promise<void>;
}

/** Watches every grant made while it runs, through MONITOR (script commands included). */
export async function watchHostGrants(redisUrl: string, delayMs: number): Promise<HostGrants> {
  const byHost = new Map<string, number[]>();
  const conn = new Redis(redisUrl, { lazyConnect: true });
  const monitor = await conn.monitor();
  let last: readonly string[] = [];
  monitor.on('monitor', (_time: string, args: string[]) => {
    // A script's commands reach MONITOR one after another: the grant's SET of the next start comes just before its
    // SET of the sending mark. (sent.lua DELs the mark, and its own SET of the next start is not followed by one.)
    const m = args[0]?.toLowerCase() === 'set' ? SENDING.exec(args[1] ?? '') : null;
    if (m && last[0]?.toLowerCase() === 'set' && last[1] === `${m[1]}:{host:${m[2]}}:next`) {
      const list = byHost.get(m[2]!) ?? [];
      list.push(Number(last[2]) - delayMs);
      byHost.set(m[2]!, list);
    }
    last = args;
  });
  return {
    byHost,
    async stop() {
      monitor.disconnect();
      conn.disconnect();
    },
  };
}

/** The gaps between consecutive grants of one host, in ms. */
export function grantGaps(grants: readonly number[]): number[] {
  return grants.slice(1).map((t, i) => t - grants[i]!);
}
