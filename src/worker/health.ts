import { createServer, type Server } from 'node:http';
import { FlagValueError } from '../core/flagError';

// Health and readiness of a worker for an orchestrator (`worker --health [HOST:]PORT`, issue 36 item 4): Kubernetes'
// liveness and readiness probes, a load balancer's checks. Each answer is JSON saying why.
//
// Live (/healthz) asks whether a restart would help, nothing more: a failed liveness probe kills the container. So a
// Redis that is down, or refuses writes, leaves the worker live: it waits and reconnects by itself, and restarting
// every pod of the fleet at once (the probes all see the same Redis) would only add a storm of reconnects when it is
// back. What a restart does mend: a connection that says it is up while Redis answers nothing (a half-open socket
// behind a NAT or a firewall that dropped it). Ready (/readyz): live, its heartbeats reach Redis, its BullMQ workers
// run, and it is not draining (after SIGTERM it finishes its pages and takes no more).

/** A heartbeat older than this (they come every 5 s) means the worker lost Redis. */
export const HEALTH_STALE_MS = 30_000;

export interface HealthState {
  /** When the last heartbeat reached Redis (ms), or null before the first. */
  readonly lastBeatAt: number | null;
  /** When Redis last answered a heartbeat, with a refusal too (ms), or null before the first. */
  readonly lastReplyAt: number | null;
  /** Why Redis refused the last heartbeat (its error), or null when it took it. */
  readonly refusal: string | null;
  /** How long the worker's connection has been lost and reconnecting (ms); 0 while it is up. */
  readonly redisDownForMs: number;
  /** Before the worker runs: what it is doing (waiting for Redis, with the last attempt's failure; starting). */
  readonly notYet?: string;
  readonly running: boolean;
  readonly draining: boolean;
  readonly concurrency: number;
  readonly processed: number;
}

export interface HealthAnswer {
  readonly status: 200 | 503;
  readonly body: {
    readonly live: boolean;
    readonly ready: boolean;
    readonly why: string;
    readonly concurrency: number;
    readonly processed: number;
  };
}

const seconds = (ms: number): number => Math.round(ms / 1000);

/** The answer to /healthz (`ready` false) or /readyz (`ready` true), from the worker's state now. */
export function healthAnswer(s: HealthState, ready: boolean, now: number): HealthAnswer {
  const { live, why } = liveness(s, now);
  const beating = s.lastBeatAt !== null && now - s.lastBeatAt <= HEALTH_STALE_MS;
  const isReady = live && beating && s.redisDownForMs === 0 && s.running && !s.draining;
  const body = { live, ready: isReady, why, concurrency: s.concurrency, processed: s.processed };
  return { status: (ready ? isReady : live) ? 200 : 503, body };
}

function liveness(s: HealthState, now: number): { live: boolean; why: string } {
  // A drain ends by itself (its pages finish, --drain-timeout, or the jobs' locks lapse): killing it loses its pages.
  if (s.draining) return { live: true, why: 'draining: finishing its pages, taking no more' };
  if (s.lastBeatAt === null) return { live: true, why: s.notYet ?? 'not connected to Redis yet' };
  if (s.redisDownForMs > 0)
    return {
      live: true,
      why: `Redis out of reach for ${seconds(s.redisDownForMs)} s: reconnecting (a restart would not bring it back)`,
    };
  const replied = s.lastReplyAt ?? s.lastBeatAt;
  if (now - replied > HEALTH_STALE_MS)
    return { live: false, why: `connected, but Redis has answered no heartbeat for ${seconds(now - replied)} s` };
  if (s.refusal !== null && now - s.lastBeatAt > HEALTH_STALE_MS)
    return {
      live: true,
      why: `Redis refuses the heartbeats (${s.refusal}): none reached it for ${seconds(now - s.lastBeatAt)} s`,
    };
  return { live: true, why: s.running ? 'connected and working' : 'starting' };
}

/** `PORT` or `HOST:PORT` (default host 0.0.0.0: a probe comes from outside the container). */
export function parseHealthAddress(value: string): { host: string; port: number } {
  const m = /^(?:(.+):)?(\d{1,5})$/.exec(value.trim());
  const port = m ? Number(m[2]) : NaN;
  if (!m || port < 1 || port > 65535)
    throw new FlagValueError('health', value, 'expected PORT or HOST:PORT (e.g. 8080, 127.0.0.1:8080)');
  return { host: m[1] ?? '0.0.0.0', port };
}

/** Serves /healthz and /readyz (and /livez, as /healthz) until closed. */
export async function serveHealth(address: { host: string; port: number }, state: () => HealthState): Promise<Server> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path !== '/healthz' && path !== '/livez' && path !== '/readyz') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('GET /healthz or /readyz\n');
      return;
    }
    const a = healthAnswer(state(), path === '/readyz', Date.now());
    res.writeHead(a.status, { 'content-type': 'application/json' }).end(`${JSON.stringify(a.body)}\n`);
  });
  await new Promise<void>((resolve, reject) => {
    // Named as --metrics-port's and the monitor's failures are: which flag, which address, why.
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(new Error(`--health: cannot listen on ${address.host}:${address.port} (${err.code ?? err.message})`)),
    );
    server.listen(address.port, address.host, () => resolve());
  });
  server.unref();
  return server;
}
