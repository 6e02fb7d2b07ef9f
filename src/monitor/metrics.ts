import { collectDefaultMetrics, Counter, Gauge, Registry } from 'prom-client';
import type { Redis } from '../redis/connect';
import type { CrawlStatus } from '../frontier/types';
import { readLiveWorkers } from '../frontier/fleet';
import { readFrontierByHost } from '../observe/frontier';
import { readTaskStatus, waitingPages } from '../observe/taskStatus';
import type { MonitorViews } from './views';

// The monitor's /metrics: Prometheus's view of every task on the Redis, read at scrape time by a collector (the
// monitor keeps nothing between scrapes, so a restarted monitor loses nothing). Figures come from the read-models
// `status --json` uses (readTaskStatus: the run's counters and the job counts), and the rows a run stored from the
// read the run summary makes (store/runRows.ts), so a dashboard in Grafana and the terminal agree. Fetch durations are
// measured by workers only: `worker --metrics-port` serves their histogram. Labels are `task` and `reason` only, never a URL or a host: their number stays bounded.
//
// The counters are the current run's counters: a new run starts them from zero again, which Prometheus's rate()
// and increase() read as a counter reset.

interface Scrape {
  readonly statuses: readonly CrawlStatus[];
  readonly waitingHosts: ReadonlyMap<string, number>;
  readonly workersByTask: ReadonlyMap<string, number>;
  readonly workers: number;
  /** Rows each task's current run stored (store/runRows.ts via stored.ts), for the tasks whose store is readable here. */
  readonly stored: ReadonlyMap<string, number>;
  /** Items each task's current run added, changed and removed (store/history/query.ts via stored.ts); 0 until its history closes. */
  readonly changes: ReadonlyMap<string, { readonly added: number; readonly changed: number; readonly removed: number }>;
}

type Labels = Record<string, string>;
type Setter = (s: Scrape, put: (labels: Labels, value: number) => void) => void;

export function monitorRegistry(redis: Redis, views: MonitorViews): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'crawl_studio_monitor_' });
  let pending: Promise<Scrape> | null = null;
  // Every metric's collect() runs at once when a scrape starts (Registry.metrics): one read of Redis serves them all.
  const scrape = () => (pending ??= readScrape(redis, views).finally(() => (pending = null)));
  const perTask =
    (f: (st: CrawlStatus) => number): Setter =>
    (s, put) => {
      for (const st of s.statuses) put({ task: st.task }, f(st));
    };
  const byReason =
    (f: (st: CrawlStatus) => Readonly<Record<string, number>>): Setter =>
    (s, put) => {
      for (const st of s.statuses) for (const [reason, n] of Object.entries(f(st))) put({ task: st.task, reason }, n);
    };
  const counter = (name: string, help: string, labelNames: string[], set: Setter) =>
    new Counter({
      name,
      help,
      labelNames,
      registers: [registry],
      async collect() {
        const s = await scrape();
        this.reset();
        set(s, (labels, v) => this.inc(labels, Math.max(0, v)));
      },
    });
  const gauge = (name: string, help: string, labelNames: string[], set: Setter) =>
    new Gauge({
      name,
      help,
      labelNames,
      registers: [registry],
      async collect() {
        const s = await scrape();
        this.reset();
        set(s, (labels, v) => this.set(labels, v));
      },
    });
  const stats = (st: CrawlStatus) => st.stats;
  counter(
    'crawl_studio_pages_fetched_total',
    "Pages fetched in the task's current run (HTML or not, sitemaps and 304s included).",
    ['task'],
    perTask((st) => stats(st)?.done ?? 0),
  );
  counter(
    'crawl_studio_pages_failed_total',
    'Pages that failed for good in the current run, by reason (http-404, timeout, dns...).',
    ['task', 'reason'],
    byReason((st) => stats(st)?.failures ?? {}),
  );
  counter(
    'crawl_studio_pages_skipped_total',
    'Pages never fetched on purpose in the current run, by reason (robots, limit, depth...).',
    ['task', 'reason'],
    byReason((st) => stats(st)?.skipped ?? {}),
  );
  counter(
    'crawl_studio_pages_enqueued_total',
    'URLs queued in the current run (start URLs, links, sitemap entries, enqueued by hand).',
    ['task'],
    perTask((st) => stats(st)?.enqueued ?? 0),
  );
  counter(
    'crawl_studio_items_extracted_total',
    'Items extracted from pages in the current run.',
    ['task'],
    perTask((st) => stats(st)?.items ?? 0),
  );
  counter(
    'crawl_studio_items_stored_total',
    'Item rows the task\'s current run inserted or updated in its store (the run summary\'s "items stored"); only for tasks whose task file and store this monitor can read, refreshed every 10 s.',
    ['task'],
    (s, put) => {
      for (const [task, n] of s.stored) put({ task }, n);
    },
  );
  const changed =
    (kind: 'added' | 'changed' | 'removed'): Setter =>
    (s, put) => {
      for (const [task, c] of s.changes) put({ task }, c[kind]);
    };
  const onlyReadable = 'only for tasks whose task file and store this monitor can read, refreshed every 10 s';
  counter(
    'crawl_studio_items_added_total',
    `Items the task's current run added (new keys, or keys back after a removal): the run summary's "items changed"; 0 until the run finishes and closes its history; ${onlyReadable}.`,
    ['task'],
    changed('added'),
  );
  counter(
    'crawl_studio_items_changed_total',
    `Items of the current run with a field whose value changed since the previous run (an item counts once); 0 until the run closes its history; ${onlyReadable}.`,
    ['task'],
    changed('changed'),
  );
  counter(
    'crawl_studio_items_removed_total',
    `Items the current run no longer found (a complete run only); 0 until the run closes its history; ${onlyReadable}.`,
    ['task'],
    changed('removed'),
  );
  counter(
    'crawl_studio_links_dropped_total',
    'Links found on pages and dropped in the current run, by reason (offsite, pattern, depth...).',
    ['task', 'reason'],
    byReason((st) => stats(st)?.dropped ?? {}),
  );
  counter(
    'crawl_studio_downloaded_bytes_total',
    'Bytes of response bodies downloaded in the current run.',
    ['task'],
    perTask((st) => stats(st)?.bytes ?? 0),
  );
  gauge(
    'crawl_studio_pages_waiting',
    'Pages waiting for a worker: in the frontier and as BullMQ jobs (the views\' "waiting").',
    ['task'],
    perTask((st) => waitingPages(st.counts)),
  );
  gauge(
    'crawl_studio_frontier_pages',
    'Pages waiting in the compact frontier (not BullMQ jobs yet).',
    ['task'],
    perTask((st) => st.counts.frontier),
  );
  gauge(
    'crawl_studio_queue_pages',
    "Pages waiting as BullMQ jobs in the task's window.",
    ['task'],
    perTask((st) => st.counts.waiting + st.counts.prioritized),
  );
  gauge(
    'crawl_studio_pages_active',
    'Pages being fetched now.',
    ['task'],
    perTask((st) => st.counts.active),
  );
  gauge(
    'crawl_studio_pages_delayed',
    "Pages set aside until a later start (retry backoff, a host's promised start).",
    ['task'],
    perTask((st) => st.counts.delayed),
  );
  gauge(
    'crawl_studio_hosts_waiting',
    'Hosts with pages waiting in the frontier (once per priority band they wait in).',
    ['task'],
    (s, put) => {
      for (const [task, n] of s.waitingHosts) put({ task }, n);
    },
  );
  gauge(
    'crawl_studio_task_workers',
    "Live worker processes taking the task's pages (heartbeat within the last minute).",
    ['task'],
    (s, put) => {
      for (const st of s.statuses) put({ task: st.task }, s.workersByTask.get(st.task) ?? 0);
    },
  );
  gauge(
    'crawl_studio_workers',
    'Live worker processes on this Redis (heartbeat within the last minute).',
    [],
    (s, put) => put({}, s.workers),
  );
  gauge(
    'crawl_studio_task_paused',
    "1 while the task's queue is paused.",
    ['task'],
    perTask((st) => (st.isPaused ? 1 : 0)),
  );
  gauge(
    'crawl_studio_run_running',
    "1 while the task's current run is starting or running, 0 once finished or stopped.",
    ['task'],
    perTask((st) => (st.run && (st.run.state === 'running' || st.run.state === 'starting') ? 1 : 0)),
  );
  gauge(
    'crawl_studio_run_start_time_seconds',
    "When the task's current run started (Unix time).",
    ['task'],
    perTask((st) => (st.run ? st.run.startedAt / 1000 : 0)),
  );
  return registry;
}

async function readScrape(redis: Redis, views: MonitorViews): Promise<Scrape> {
  const { names } = await views.taskNames();
  const [statuses, hosts, live, stored] = await Promise.all([
    Promise.all(names.map((n) => readTaskStatus(redis, n))),
    Promise.all(names.map(async (n) => [n, (await readFrontierByHost(redis, n, 0)).hosts] as const)),
    readLiveWorkers(redis),
    Promise.all(names.map(async (n) => [n, await views.stored.read(n)] as const)),
  ]);
  const workersByTask = new Map<string, number>();
  for (const w of live) for (const t of w.tasks) workersByTask.set(t, (workersByTask.get(t) ?? 0) + 1);
  const storedRows = new Map<string, number>();
  const changes = new Map<string, { added: number; changed: number; removed: number }>();
  for (const [task, v] of stored) {
    if (!v.location || !v.run) continue;
    storedRows.set(
      task,
      v.rows.reduce((a, r) => a + r.count, 0),
    );
    changes.set(task, {
      added: v.changes?.added ?? 0,
      changed: v.changes?.changed ?? 0,
      removed: v.changes?.removed ?? 0,
    });
  }
  return { statuses, waitingHosts: new Map(hosts), workersByTask, workers: live.length, stored: storedRows, changes };
}
