import { createServer, type Server } from 'node:http';

// Health and readiness of a worker for an orchestrator (`worker --health [HOST:]PORT`, issue 36 item 4): Kubernetes'
// liveness and readiness probes, a load balancer's checks. Live: the process answers and its last heartbeat reached
// Redis not long ago. Ready: live, its BullMQ workers run, and it is not draining (after SIGTERM it finishes its
// pages and takes no more). Each answer is JSON saying why.

/** A heartbeat older than this (they come every 5 s) means the worker lost Redis. */
export const HEALTH_STALE_MS = 30_000;

export interface HealthState {
  /** When the last heartbeat reached Redis (ms), or null before the first. */
  readonly lastBeatAt: number | null;
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

/** The answer to /healthz (`ready` false) or /readyz (`ready` true), from the worker's state now. */
export function healthAnswer(s: HealthState, ready: boolean, now: number): HealthAnswer {
  const live = s.lastBeatAt !== null && now - s.lastBeatAt <= HEALTH_STALE_MS;
  const why =
    s.lastBeatAt === null
      ? 'not connected to Redis yet'
      : !live
        ? `no heartbeat reached Redis for ${Math.round((now - s.lastBeatAt) / 1000)} s`
        : s.draining
          ? 'draining: finishing its pages, taking no more'
          : !s.running
            ? 'starting'
            : 'connected and working';
  const isReady = live && s.running && !s.draining;
  const body = { live, ready: isReady, why, concurrency: s.concurrency, processed: s.processed };
  return { status: (ready ? isReady : live) ? 200 : 503, body };
}

/** `PORT` or `HOST:PORT` (default host 0.0.0.0: a probe comes from outside the container). */
export function parseHealthAddress(value: string): { host: string; port: number } {
  const m = /^(?:(.+):)?(\d{1,5})$/.exec(value.trim());
  const port = m ? Number(m[2]) : NaN;
  if (!m || port < 1 || port > 65535)
    throw new Error(`--health '${value}': expected PORT or HOST:PORT (e.g. 8080, 127.0.0.1:8080)`);
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
    server.once('error', reject);
    server.listen(address.port, address.host, () => resolve());
  });
  server.unref();
  return server;
}
