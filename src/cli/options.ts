import { REDIS_FLAG_SPEC, WORKER_FLAG_SPEC } from '../worker/args';
import type { OptionSpec, OptionTable } from './spec';

// Options several commands share, with their help. The Redis and worker flags are defined once in worker/args.ts
// (the worker process parses them too); the help here is keyed by the same names, so a flag added there without
// help here does not compile.

const ALLOW_SCRIPTS_HELP =
  "let `browser.actions` run the workspace's scripts (`evaluate: file.js`) in rendered pages; a task with one is refused without it";

type Helped<S extends Readonly<Record<string, { readonly type: 'string' | 'boolean'; readonly short?: string }>>> = {
  readonly [K in keyof S]: OptionSpec & { readonly type: S[K]['type'] };
};

function withHelp<S extends Readonly<Record<string, { readonly type: 'string' | 'boolean'; readonly short?: string }>>>(
  spec: S,
  help: { readonly [K in keyof S]: readonly [value: string | undefined, help: string] },
): Helped<S> {
  const out: Record<string, OptionSpec> = {};
  for (const [name, o] of Object.entries(spec)) {
    const [value, text] = help[name as keyof S];
    out[name] = { ...o, ...(value ? { value } : {}), help: text };
  }
  return out as Helped<S>;
}

export const REDIS_OPTIONS = withHelp(REDIS_FLAG_SPEC, {
  redis: [
    'URL',
    'redis://[user:pass@]host:6379[/db], rediss:// (TLS), redis+sentinel://… or redis+cluster://… (a password belongs in $CRAWL_STUDIO_REDIS)',
  ],
  sentinel: [
    'HOST:PORT,...',
    'the sentinels of a Sentinel deployment (with --sentinel-master; passwords: $CRAWL_STUDIO_REDIS_PASSWORD, $CRAWL_STUDIO_SENTINEL_PASSWORD)',
  ],
  'sentinel-master': ['NAME', 'the master the sentinels name'],
  cluster: ['HOST:PORT,...', 'any nodes of a Redis Cluster'],
});

export const WORKER_OPTIONS = withHelp(WORKER_FLAG_SPEC, {
  ...{
    redis: REDIS_HELP('redis'),
    sentinel: REDIS_HELP('sentinel'),
    'sentinel-master': REDIS_HELP('sentinel-master'),
    cluster: REDIS_HELP('cluster'),
  },
  concurrency: [
    'N|auto|MIN..MAX',
    'requests each worker has in flight (default 16); auto or a range scales them (README, Autoscaling)',
  ],
  autoscale: ['MAX,MIN', "Celery's spelling of --concurrency MIN..MAX"],
  'max-memory': ['SIZE', "caps an autoscaled worker's memory besides its container's limit (e.g. 2GB)"],
  health: [
    '[HOST:]PORT',
    'serve /healthz (heartbeats reach Redis) and /readyz (working, not draining) for an orchestrator',
  ],
  'metrics-port': [
    'N',
    "serve this worker's own Prometheus /metrics on port N (pages, failures by reason, fetch durations; 0: any free port)",
  ],
  'metrics-bind': [
    'ADDRESS',
    'the address of --metrics-port (default 127.0.0.1; 0.0.0.0 for a scraper on another machine)',
  ],
  'drain-timeout': [
    'DURATION',
    'after SIGTERM, how long to finish in-flight pages before leaving them to other workers (e.g. 25s)',
  ],
  'lock-duration': ['MS', "how long a page's job stays locked to its worker without a renewal (default 30000)"],
  'stalled-interval': ['MS', 'how often stalled jobs are looked for (default 30000)'],
  browser: [
    'PATH',
    "the Chromium that renders `browser` rules' pages (default $CRAWL_STUDIO_BROWSER, else chromium on PATH)",
  ],
  'log-format': ['human|json', 'log lines as text (default) or one JSON object a line'],
  'log-stats': [
    'DURATION',
    "how often the log says what the worker did: pages, failures by reason, items (default 60s; 0: never), and when a task's run starts or ends",
  ],
  'log-level': [
    'info|warn|error',
    "the least severe lines written (default info; warn leaves out the minute's activity lines, error also each failed page's line; $CRAWL_STUDIO_LOG_LEVEL)",
  ],
  'allow-scripts': [undefined, ALLOW_SCRIPTS_HELP],
});

function REDIS_HELP(name: keyof typeof REDIS_OPTIONS): readonly [string | undefined, string] {
  const o = REDIS_OPTIONS[name];
  return [o.value, o.help];
}

/** `--allow-scripts` of run, worker and fixture save: the one switch for `browser.actions` scripts. */
export const ALLOW_SCRIPTS_OPTION = {
  'allow-scripts': { type: 'boolean', help: ALLOW_SCRIPTS_HELP },
} as const satisfies OptionTable;

export const STORE_OPTION = {
  store: {
    type: 'string',
    value: 'URL',
    help: "the store to read (default: the task's store.url, else .crawl/<task>.sqlite)",
  },
} as const satisfies OptionTable;

export const JSON_OPTION = {
  json: { type: 'boolean', help: 'print JSON instead of text' },
} as const satisfies OptionTable;

/** Autoscaling options of `run` (worker/args.ts SCALE_FLAG_SPEC): the worker command has them in WORKER_OPTIONS. */
export const SCALE_OPTIONS = {
  autoscale: { type: 'string', value: 'MAX,MIN', help: "Celery's spelling of --concurrency MIN..MAX" },
  'max-memory': {
    type: 'string',
    value: 'SIZE',
    help: "caps an autoscaled worker's memory besides its container's limit (e.g. 2GB)",
  },
} as const satisfies OptionTable;

/** For long-lived commands (run, writer, worker; monitor may add it too): how log lines are written. */
export const LOG_FORMAT_OPTION = {
  'log-format': {
    type: 'string',
    value: 'human|json',
    help: 'lines for people (default) or one JSON object a line (time, level, task, run, worker, event, url, reason)',
  },
} as const satisfies OptionTable;
