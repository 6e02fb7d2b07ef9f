import { createServer, type Server } from 'node:http';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Job } from 'bullmq';
import type { PageJobData, PageJobResult } from '../frontier/types';
import { FlagValueError } from '../core/flagError';

// A worker's own Prometheus metrics (`worker --metrics-port N`, issue 31 item 4), for a worker scraped on its own
// (a Kubernetes pod, a machine of the fleet): what this process did since it started, counted as its BullMQ
// Workers report each job (taskWorkers.ts), and how long its pages took. The monitor's /metrics (monitor/metrics.ts)
// gives the runs' totals from Redis; these are per process, named crawl_studio_worker_* so the two never add up
// by mistake, plus crawl_studio_fetch_duration_seconds, which only a worker can measure. Labels: `task`, `reason`.
// Served on 127.0.0.1 unless --metrics-bind says otherwise: nothing here needs a token, and nothing here is secret,
// but a fleet's task names are nobody else's business.

/** Seconds a page's attempt took: from a worker taking it to its end (fetch or render, parse, extract). */
const DURATION_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];

type PageJob = Job<PageJobData, PageJobResult>;

export interface WorkerMetrics {
  readonly registry: Registry;
  /** A job that ended well (fetched, non-HTML or skipped). */
  completed(task: string, job: PageJob, result: PageJobResult | undefined): void;
  /** A job's attempt that failed; `final`: the page failed for good. */
  failed(task: string, job: PageJob, reason: string, final: boolean): void;
}

export function workerMetrics(concurrency: () => number): WorkerMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'crawl_studio_worker_' });
  const r = [registry];
  const fetched = new Counter({
    name: 'crawl_studio_worker_pages_fetched_total',
    help: 'Pages this worker fetched (HTML or not, sitemaps and 304s included) since it started.',
    labelNames: ['task'],
    registers: r,
  });
  const skipped = new Counter({
    name: 'crawl_studio_worker_pages_skipped_total',
    help: 'Pages this worker skipped on purpose (robots, limit, depth...), by reason.',
    labelNames: ['task', 'reason'],
    registers: r,
  });
  const failed = new Counter({
    name: 'crawl_studio_worker_pages_failed_total',
    help: 'Pages that failed for good in this worker, by reason (http-404, timeout...).',
    labelNames: ['task', 'reason'],
    registers: r,
  });
  const retried = new Counter({
    name: 'crawl_studio_worker_page_retries_total',
    help: 'Attempts that failed in this worker and left the page to be tried again, by reason.',
    labelNames: ['task', 'reason'],
    registers: r,
  });
  const items = new Counter({
    name: 'crawl_studio_worker_items_extracted_total',
    help: 'Items this worker extracted from pages.',
    labelNames: ['task'],
    registers: r,
  });
  const links = new Counter({
    name: 'crawl_studio_worker_links_found_total',
    help: 'Links this worker found on pages and kept (queued or already seen).',
    labelNames: ['task'],
    registers: r,
  });
  const duration = new Histogram({
    name: 'crawl_studio_fetch_duration_seconds',
    help: 'Time one attempt at a page took in this worker, from taking it to its end: the request (or the render), parsing and extraction.',
    labelNames: ['task'],
    buckets: DURATION_BUCKETS,
    registers: r,
  });
  new Gauge({
    name: 'crawl_studio_worker_concurrency',
    help: 'Requests this worker may have in flight now (per task; autoscaled workers move it).',
    registers: r,
    collect() {
      this.set(concurrency());
    },
  });
  const timed = (task: string, job: PageJob) => {
    if (job.processedOn && job.finishedOn && job.finishedOn >= job.processedOn)
      duration.observe({ task }, (job.finishedOn - job.processedOn) / 1000);
  };
  return {
    registry,
    completed(task, job, result) {
      timed(task, job);
      if (result?.outcome === 'skipped') skipped.inc({ task, reason: result.reason ?? 'other' });
      else fetched.inc({ task });
      if (result?.items) items.inc({ task }, result.items);
      if (result?.links) links.inc({ task }, result.links);
    },
    failed(task, job, reason, final) {
      timed(task, job);
      (final ? failed : retried).inc({ task, reason });
    },
  };
}

/** `--metrics-port N [--metrics-bind ADDRESS]`: GET /metrics in Prometheus's text format, until the process ends. */
export async function serveMetrics(
  address: { host: string; port: number },
  registry: Registry,
): Promise<Server & { url: string }> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD')
      return void res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain' }).end('GET /metrics\n');
    if (path !== '/metrics') return void res.writeHead(404, { 'content-type': 'text/plain' }).end('GET /metrics\n');
    registry.metrics().then(
      (text) =>
        res.writeHead(200, { 'content-type': registry.contentType }).end(req.method === 'HEAD' ? undefined : text),
      (err: unknown) =>
        res
          .writeHead(500, { 'content-type': 'text/plain' })
          .end(`metrics failed: ${err instanceof Error ? err.message : String(err)}\n`),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(
        new Error(`--metrics-port: cannot listen on ${address.host}:${address.port} (${err.code ?? err.message})`),
      ),
    );
    server.listen(address.port, address.host, () => resolve());
  });
  server.unref();
  const port = (server.address() as { port: number }).port;
  return Object.assign(server, {
    url: `http://${address.host.includes(':') ? `[${address.host}]` : address.host}:${port}/metrics`,
  });
}

/** --metrics-port (0: any free port, said in the log) and --metrics-bind (default 127.0.0.1). */
export function metricsAddress(port: string, bind: string | undefined): { host: string; port: number } {
  const n = Number(port);
  if (!/^\d{1,5}$/.test(port.trim()) || n > 65535)
    throw new FlagValueError('metrics-port', port, 'expected a port number (e.g. 9464; 0: any free port)');
  return { host: bind ?? '127.0.0.1', port: n };
}
