import { collectDefaultMetrics, Counter, Gauge, Registry } from 'prom-client';
import type { Redis } from '../redis/connect';
import { readLiveWorkers } from '../frontier/fleet';
import { readFrontierByHost } from '../observe/frontier';
import { readTaskStatus, waitingPages, type TaskStatus } from '../observe/taskStatus';
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
  readonly statuses: readonly TaskStatus[];
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

/** One metric: a counter (the current run's, from zero at each run) or a gauge, and how a scrape sets it. */
interface MetricDef {
  readonly type: 'counter' | 'gauge';
  readonly name: string;
  readonly help: string;
  readonly labels: string[];
  readonly set: Setter;
}

const perTask =
  (f: (st: TaskStatus) => number): Setter =>
  (s, put) => {
    for (const st of s.statuses) put({ task: st.task }, f(st));
  };
const byReason =
  (f: (st: TaskStatus) => Readonly<Record<string, number>>): Setter =>
  (s, put) => {
    for (const st of s.statuses) for (const [reason, n] of Object.entries(f(st))) put({ task: st.task, reason }, n);
  };
const changed =
  (kind: 'added' | 'changed' | 'removed'): Setter =>
  (s, put) => {
    for (const [task, c] of s.changes) put({ task }, c[kind]);
  };
const onlyReadable = 'only for tasks whose task file and store this monitor can read, refreshed every 10 s';

/** Every metric of /metrics, in the order they are served. */
const METRICS: readonly MetricDef[] = [
  {
    type: 'counter',
    name: 'crawl_studio_pages_fetched_total',
    help: "Pages fetched in the task's current run (HTML or not, sitemaps and 304s included).",
    labels: ['task'],
    set: perTask((st) => st.stats?.done ?? 0),
  },
  {
    type: 'counter',
    name: 'crawl_studio_pages_failed_total',
    help: 'Pages that failed for good in the current run, by reason (http-404, timeout, dns...).',
    labels: ['task', 'reason'],
    set: byReason((st) => st.stats?.failures ?? {}),
  },
  {
    type: 'counter',
    name: 'crawl_studio_pages_skipped_total',
    help: 'Pages never fetched on purpose in the current run, by reason (robots, limit, depth...).',
    labels: ['task', 'reason'],
    set: byReason((st) => st.stats?.skipped ?? {}),
  },
  {
    type: 'counter',
    name: 'crawl_studio_pages_enqueued_total',
    help: 'URLs queued in the current run (start URLs, links, sitemap entries, enqueued by hand).',
    labels: ['task'],
    set: perTask((st) => st.stats?.enqueued ?? 0),
  },
  {
    type: 'counter',
    name: 'crawl_studio_items_extracted_total',
    help: 'Items extracted from pages in the current run.',
    labels: ['task'],
    set: perTask((st) => st.stats?.items ?? 0),
  },
  {
    type: 'counter',
    name: 'crawl_studio_items_stored_total',
    help: 'Item rows the task\'s current run inserted or updated in its store (the run summary\'s "items stored"); only for tasks whose task file and store this monitor can read, refreshed every 10 s.',
    labels: ['task'],
    set: (s, put) => {
      for (const [task, n] of s.stored) put({ task }, n);
    },
  },
  {
    type: 'counter',
    name: 'crawl_studio_items_added_total',
    help: `Items the task's current run added (new keys, or keys back after a removal): the run summary's "items changed"; 0 until the run finishes and closes its history; ${onlyReadable}.`,
    labels: ['task'],
    set: changed('added'),
  },
  {
    type: 'counter',
    name: 'crawl_studio_items_changed_total',
    help: `Items of the current run with a field whose value changed since the previous run (an item counts once); 0 until the run closes its history; ${onlyReadable}.`,
    labels: ['task'],
    set: changed('changed'),
  },
  {
    type: 'counter',
    name: 'crawl_studio_items_removed_total',
    help: `Items the current run no longer found (a complete run only); 0 until the run closes its history; ${onlyReadable}.`,
    labels: ['task'],
    set: changed('removed'),
  },
  {
    type: 'counter',
    name: 'crawl_studio_links_dropped_total',
    help: 'Links found on pages and dropped in the current run, by reason (offsite, pattern, depth...).',
    labels: ['task', 'reason'],
    set: byReason((st) => st.stats?.dropped ?? {}),
  },
  {
    type: 'counter',
    name: 'crawl_studio_downloaded_bytes_total',
    help: 'Bytes of response bodies downloaded in the current run.',
    labels: ['task'],
    set: perTask((st) => st.stats?.bytes ?? 0),
  },
  {
    type: 'gauge',
    name: 'crawl_studio_pages_waiting',
    help: 'Pages waiting for a worker: in the frontier and as BullMQ jobs (the views\' "waiting").',
    labels: ['task'],
    set: perTask((st) => waitingPages(st.counts)),
  },
  {
    type: 'gauge',
    name: 'crawl_studio_frontier_pages',
    help: 'Pages waiting in the compact frontier (not BullMQ jobs yet).',
    labels: ['task'],
    set: perTask((st) => st.counts.frontier),
  },
  {
    type: 'gauge',
    name: 'crawl_studio_queue_pages',
    help: "Pages waiting as BullMQ jobs in the task's window.",
    labels: ['task'],
    set: perTask((st) => st.counts.waiting + st.counts.prioritized),
  },
  {
    type: 'gauge',
    name: 'crawl_studio_pages_active',
    help: 'Pages being fetched now.',
    labels: ['task'],
    set: perTask((st) => st.counts.active),
  },
  {
    type: 'gauge',
    name: 'crawl_studio_pages_delayed',
    help: "Pages set aside until a later start (retry backoff, a host's promised start).",
    labels: ['task'],
    set: perTask((st) => st.counts.delayed),
  },
  {
    type: 'gauge',
    name: 'crawl_studio_hosts_waiting',
    help: 'Hosts with pages waiting in the frontier (once per priority band they wait in).',
    labels: ['task'],
    set: (s, put) => {
      for (const [task, n] of s.waitingHosts) put({ task }, n);
    },
  },
  {
    type: 'gauge',
    name: 'crawl_studio_task_workers',
    help: "Live worker processes taking the task's pages (heartbeat within the last minute).",
    labels: ['task'],
    set: (s, put) => {
      for (const st of s.statuses) put({ task: st.task }, s.workersByTask.get(st.task) ?? 0);
    },
  },
  {
    type: 'gauge',
    name: 'crawl_studio_workers',
    help: 'Live worker processes on this Redis (heartbeat within the last minute).',
    labels: [],
    set: (s, put) => put({}, s.workers),
  },
  {
    type: 'gauge',
    name: 'crawl_studio_task_paused',
    help: "1 while the task's queue is paused.",
    labels: ['task'],
    set: perTask((st) => (st.isPaused ? 1 : 0)),
  },
  {
    type: 'gauge',
    name: 'crawl_studio_run_running',
    help: "1 while the task's current run is starting or running, 0 once finished or stopped.",
    labels: ['task'],
    set: perTask((st) => (st.run && (st.run.state === 'running' || st.run.state === 'starting') ? 1 : 0)),
  },
  {
    type: 'gauge',
    name: 'crawl_studio_run_start_time_seconds',
    help: "When the task's current run started (Unix time).",
    labels: ['task'],
    set: perTask((st) => (st.run ? st.run.startedAt / 1000 : 0)),
  },
  {
    type: 'gauge',
    name: 'crawl_studio_schedule_next_run_time_seconds',
    help: "When the task's schedule starts its next run (Unix time); absent for a task without a schedule. Past it while crawl_studio_task_paused is 1: Pause (or Stop, which holds the schedule) keeps the run waiting.",
    labels: ['task'],
    set: (s, put) => {
      for (const st of s.statuses) if (st.nextRunAt !== null) put({ task: st.task }, st.nextRunAt / 1000);
    },
  },
];

export function monitorRegistry(redis: Redis, views: MonitorViews): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'crawl_studio_monitor_' });
  let pending: Promise<Scrape> | null = null;
  // Every metric's collect() runs at once when a scrape starts (Registry.metrics): one read of Redis serves them all.
  const scrape = () => (pending ??= readScrape(redis, views).finally(() => (pending = null)));
  for (const m of METRICS) register(registry, m, scrape);
  return registry;
}

/** The metric in the registry, set afresh from the scrape each time it is collected. */
function register(registry: Registry, m: MetricDef, scrape: () => Promise<Scrape>): void {
  const config = { name: m.name, help: m.help, labelNames: m.labels, registers: [registry] };
  if (m.type === 'counter')
    new Counter({
      ...config,
      async collect() {
        await refill(this, scrape, m.set, (labels, v) => this.inc(labels, Math.max(0, v)));
      },
    });
  else
    new Gauge({
      ...config,
      async collect() {
        await refill(this, scrape, m.set, (labels, v) => this.set(labels, v));
      },
    });
}

async function refill(
  metric: { reset(): void },
  scrape: () => Promise<Scrape>,
  set: Setter,
  put: (labels: Labels, value: number) => void,
): Promise<void> {
  const s = await scrape();
  metric.reset();
  set(s, put);
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
