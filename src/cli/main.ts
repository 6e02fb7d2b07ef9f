import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { formatDiagnostic, TaskFileError } from '../core/task/diagnostics';
import { loadTaskFile } from '../workspace/taskFile';
import { parseTask } from '../core/task/parse';
import { DEMO_PORT, DEMO_SITE, serveSite } from '../demo/site';
import { CrawlQueue } from '../frontier/crawl';
import { connectRedis, type Redis } from '../redis/connect';
import { RedisNotFoundError } from '../redis/server';
import { DEFAULT_CONCURRENCY, defaultWorkers, optionalPositiveInt, positiveInt, REDIS_FLAG_SPEC, redisTargetFrom } from '../worker/args';
import { workerMain } from '../worker/main';
import type { Progress } from '../run/session';
import { launchCrawl } from '../run/launcher';
import demoTaskText from '../../examples/books.crawl.yaml';
import { droppedLine, droppedReasonLines, dropWarnings, progressLine, summaryLines } from './format';
import { chooseRedis } from '../run/redisChoice';
import { RedisTargetError } from '../core/url/redisTarget';
import { emptyFieldWarnings, qualityReports, qualityTable } from './quality';
import { saveFixture, testTaskFile } from '../workspace/fixtureStore';
import { fetchPage } from '../worker/fetcher';
import { fetchOptions } from '../worker/processor';
import { ruleOptions } from '../worker/requests';
import { isJsonContentType } from '../core/extract/json';
import { routeRule } from '../core/pipeline/page';
import { formatTestReport } from '../core/designer/fixtures';
import { storeUrlFor } from '../run/storeAttachment';
import { exportItems, openStore, type ExportFormat } from '../store';
import { createReadStream, createWriteStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { dirname } from 'node:path';
import { redactUrl } from '../redis/connect';
import { groupDigits } from '../core/units';
import { DROP_REASONS } from '../core/task/dropReasons';
import { readTaskStatus, runElapsedMs } from '../observe/taskStatus';
import { readScreenshot, screenshotUrls } from '../observe/screenshots';
import { writeScreenshot } from '../workspace/screenshots';
import { storeChecksFor } from '../workspace/storePlace';
import { CREDENTIALS_HINT } from '../core/url/credentials';
import { cmdMonitor, MonitorUsageError } from './monitor';
import { ChangesUsageError, cmdChanges, exportChangesOf, summaryChangeLines } from './changes';

// `crawl-studio`: the headless face of the engine. Every command drives the same classes the extension does.

const USAGE = `crawl-studio — design, run and observe web crawls on Redis

Usage:
  crawl-studio run <task.crawl.yaml> [--workers N] [--concurrency N] [REDIS] [--fresh] [--force] [--browser PATH]
  crawl-studio worker <task.crawl.yaml>... REDIS [--concurrency N] [--browser PATH]
  crawl-studio writer <task.crawl.yaml> [REDIS]
  crawl-studio enqueue <task.crawl.yaml> <url>... [REDIS] [--force] [--rule R]
  crawl-studio enqueue <task.crawl.yaml> --file urls.txt|- [REDIS] [--force] [--rule R]
  crawl-studio status <task.crawl.yaml> [REDIS] [--json]
  crawl-studio export <task.crawl.yaml> [--format jsonl|csv|json] [--type T] [--out FILE] [--meta] [--csv-raw]
  crawl-studio export <task.crawl.yaml> --changes [--since RUN|DATE] [--format jsonl|csv] [--type T] [--out FILE]
  crawl-studio changes <task.crawl.yaml> [--since RUN|DATE] [--type T] [--json]   added, changed, removed items
  crawl-studio validate <file>...
  crawl-studio test <task.crawl.yaml>       re-run the task's fixtures, a diff per changed field; exit 1 on a change
  crawl-studio fixture save <task.crawl.yaml> <url> [--rule R]   save a page and what the task extracts from it
  crawl-studio quality <task.crawl.yaml>    per item type and field: empty and distinct values, the selector
  crawl-studio errors <task.crawl.yaml> [--limit N]   errors recorded in the store (extraction, invalid items)
  crawl-studio screenshot <task.crawl.yaml> [url] [--out FILE] [--redis URL]   rendered pages' kept screenshots
  crawl-studio demo [--dir DIR] [--workers N]
  crawl-studio serve-demo [--port N]
  crawl-studio monitor REDIS [--port 5555] [--bind 127.0.0.1] [--token T]   web monitor, /metrics (monitor --help)

--workers N: local worker processes (default: one per two CPU cores). --concurrency N: requests each worker has in
flight (default 16). What run does depends on the task's current run on this Redis: unfinished (interrupted by
Ctrl-C, a crash or a kill) -> it is resumed: its queue, dedup state and counters continue; finished or stopped, or
none -> a new run starts from the start URLs and fetches every page again. run --fresh always starts a new run; a task that another live \`run\` or editor drives is
refused (add workers to it with \`worker\`, watch it with \`status\`), unless --force, which takes the run over: the
process that drove it stops.

--browser PATH: the Chromium or Chrome that renders the pages of a task's \`browser\` rules (default
$CRAWL_STUDIO_BROWSER, else chromium, chromium-browser or google-chrome on PATH).

REDIS is one of:
  --redis URL                   redis://[user:pass@]host:6379[/db] (rediss:// for TLS), or a Sentinel or Cluster
                                target as one URL: redis+sentinel://host:26379,host2:26379/<master>[?db=N] and
                                redis+cluster://host:7000,host2:7001
  --sentinel HOST:PORT,... --sentinel-master NAME    the master the sentinels name (failovers followed)
  --cluster HOST:PORT,...       a Redis Cluster, any of its nodes
Passwords stay off the command line: the whole target in $CRAWL_STUDIO_REDIS, or, with --sentinel and --cluster,
$CRAWL_STUDIO_REDIS_PASSWORD (data nodes) and $CRAWL_STUDIO_SENTINEL_PASSWORD (the sentinels).
Without any (nor $CRAWL_STUDIO_REDIS) a private redis-server is started for the project, with its data in
.crawl/redis next to the task file, so a crawl survives restarts.`;

class UsageError extends Error {}

export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'run':
      return cmdRun(rest);
    case 'worker':
      await workerMain(rest);
      return new Promise<number>(() => undefined); // runs until a signal ends the process
    case 'enqueue':
      return cmdEnqueue(rest);
    case 'writer':
      return cmdWriter(rest);
    case 'status':
      return cmdStatus(rest);
    case 'validate':
      return cmdValidate(rest);
    case 'export':
      return cmdExport(rest);
    case 'test':
      return cmdTest(rest);
    case 'fixture':
      return cmdFixture(rest);
    case 'quality':
      return cmdQuality(rest);
    case 'errors':
      return cmdErrors(rest);
    case 'screenshot':
      return cmdScreenshot(rest);
    case 'demo':
      return cmdDemo(rest);
    case 'serve-demo':
      return cmdServeDemo(rest);
    case 'monitor':
      return cmdMonitor(rest);
    case 'changes':
      return cmdChanges(rest);
    case undefined:
    case 'help':
    case '--help':
    case '-h':
      console.log(USAGE);
      return command ? 0 : 2;
    default:
      throw new UsageError(`unknown command '${command}'`);
  }
}

function cmdValidate(args: string[]): number {
  if (args.length === 0) throw new UsageError('validate needs at least one file');
  let errors = 0;
  for (const f of args) {
    const file = resolve(f);
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (err) {
      console.error(`${file}: cannot read (${(err as NodeJS.ErrnoException).code})`);
      errors++;
      continue;
    }
    const { diagnostics } = parseTask(text, f, storeChecksFor(file));
    for (const d of diagnostics) console.error(formatDiagnostic(d));
    const n = diagnostics.filter((d) => d.severity === 'error').length;
    errors += n;
    if (n === 0) console.log(`${f}: ok`);
    else console.error(`${f}: ${n} error${n === 1 ? '' : 's'}`);
  }
  return errors > 0 ? 1 : 0;
}

const RUN_FLAGS = {
  workers: { type: 'string', short: 'w' },
  concurrency: { type: 'string', short: 'c' },
  ...REDIS_FLAG_SPEC,
  fresh: { type: 'boolean' },
  force: { type: 'boolean' },
  'lock-duration': { type: 'string' },
  'stalled-interval': { type: 'string' },
  browser: { type: 'string' },
} as const;

async function cmdRun(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({ args, allowPositionals: true, options: RUN_FLAGS });
  if (positionals.length !== 1) throw new UsageError('run takes one task file');
  return runCrawl(positionals[0]!, {
    workers: positiveInt(values.workers, 'workers', defaultWorkers()),
    concurrency: positiveInt(values.concurrency, 'concurrency', DEFAULT_CONCURRENCY),
    redis: redisTargetFrom(values),
    fresh: values.fresh ?? false,
    force: values.force ?? false,
    lockDurationMs: optionalPositiveInt(values['lock-duration'], 'lock-duration'),
    stalledIntervalMs: optionalPositiveInt(values['stalled-interval'], 'stalled-interval'),
    browserPath: values.browser,
  });
}

interface RunFlags {
  /** Watch and finalize the current run without starting one (the `writer` command). */
  join?: boolean;
  workers: number;
  concurrency: number;
  redis: string | undefined;
  fresh: boolean;
  /** Drive the task even though another live process drives its run. */
  force?: boolean;
  lockDurationMs?: number;
  stalledIntervalMs?: number;
  /** The browser for `browser` rules (--browser). */
  browserPath?: string;
}

/** How long a second Ctrl-C waits for the killed workers' jobs to be released before the CLI exits. */
const QUIT_RELEASE_WAIT_MS = 1_000;

/**
 * The longest a graceful stop (Ctrl-C once, SIGTERM) may take before the CLI quits as on a second Ctrl-C. Pages in
 * flight usually finish in far less; what does not end is a store that stopped answering (a locked or hung
 * database), whose writer cannot stop mid-call. Quitting loses nothing: unfinished pages go back to the queue and
 * unstored items stay in Redis for the next run.
 */
const STOP_DEADLINE_MS = stopDeadlineMs(process.env.CRAWL_STUDIO_STOP_DEADLINE);

/** `$CRAWL_STUDIO_STOP_DEADLINE` in seconds (a slow store, a loaded machine), else 20 s. */
function stopDeadlineMs(value: string | undefined): number {
  const s = Number(value);
  return value && Number.isFinite(s) && s > 0 ? s * 1000 : 20_000;
}

async function runCrawl(taskFile: string, flags: RunFlags): Promise<number> {
  const task = await loadTaskFile(taskFile);
  const redis = await chooseRedis(flags.redis, task.file);
  console.log(`Redis: ${redis.describe()}`);
  const launch = launchCrawl({
    task,
    redisUrl: redis.url,
    workers: flags.workers,
    concurrency: flags.concurrency,
    workerScript: join(__dirname, 'worker.js'),
    browserPath: flags.browserPath,
    fresh: flags.fresh,
    force: flags.force,
    mode: flags.join ? 'join' : 'start',
    lockDurationMs: flags.lockDurationMs,
    stalledIntervalMs: flags.stalledIntervalMs,
    onProgress: progressPrinter(),
    onStoreOpen: (store) => console.log(`Store: ${store.store.location}`),
    onStoreMessage: (msg) => console.error(`\nstore: ${msg}`),
    onRunFinished: (run, status, store) => {
      if (!task.schedule && !flags.join) return;
      process.stdout.write('\n');
      for (const line of summaryLines(status, (status.run?.finishedAt ?? Date.now()) - run.startedAt, [`  items are in    ${store.store.location}`], task)) console.log(line);
      void launch.session.crawl.nextScheduledRun().then((next) => next && console.log(`Next run at ${new Date(next).toISOString()} (Ctrl-C to stop).`));
    },
    onWorkerExit: (pid, code, signal, expected, lines) => {
      if (!expected) console.error(`\nworker ${pid} exited unexpectedly (${signal ?? `code ${code}`}); last lines:\n  ${lines.slice(-5).join('\n  ')}`);
    },
  });
  // On its own line, as the exit message: on a terminal the progress line has no newline.
  launch.supervisor.on('released', (pid, jobs) => console.error(`\nworker ${pid}: its ${jobs} unfinished page${jobs === 1 ? '' : 's'} went back to the queue`));
  let interrupted = false;
  let quitting = false;
  let deadline: NodeJS.Timeout | undefined;
  const quit = () => {
    quitting = true;
    void launch.kill(QUIT_RELEASE_WAIT_MS).finally(() => {
      // The private redis-server may be gone already (stopped meanwhile, or killed with the terminal's group):
      // a second Ctrl-C must end quietly, not with a "kill ESRCH" stack trace.
      if (redis.managed?.owned) {
        try {
          process.kill(redis.managed.pid, 'SIGTERM');
        } catch {
          // Gone already.
        }
      }
      process.exit(130);
    });
  };
  const onSignal = () => {
    if (quitting) process.exit(130);
    if (interrupted) {
      // Quit now: nothing this process started may outlive it. Killed workers' pages return to the queue (released
      // as they die, so the next run has them at once; not waited for long); a private redis-server gets SIGTERM,
      // which writes its append-only file, so the next run resumes.
      quit();
      return;
    }
    interrupted = true;
    console.log('\nStopping: letting workers finish their pages (Ctrl-C again to quit now; the crawl resumes on the next run)…');
    launch.stop();
    deadline = setTimeout(() => {
      console.error(
        `\nStill stopping after ${STOP_DEADLINE_MS / 1000} s (a store that does not answer?): quitting now. ` +
          `Run the same command again to resume the run; items not stored yet stay in Redis for it.`,
      );
      quit();
    }, STOP_DEADLINE_MS);
    deadline.unref();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    const result = await launch.done;
    process.stdout.write('\n');
    // Say which it was: "resumes" read as "continues after a finished run" in the README, and it never does.
    if (result.resumed) console.log(`Resumed run ${result.run.run} started ${new Date(result.run.startedAt).toISOString()} (it had not finished).`);
    else {
      const again = task.request.conditional ? 'every page requested again, conditionally (request.conditional)' : 'every page fetched again';
      console.log(`New run ${result.run.run}${flags.fresh ? ' (--fresh)' : ''}: ${again}; \`run\` resumes a run only while it is unfinished.`);
    }
    if (interrupted) {
      console.log(`Stopped. Run the same command again to resume run ${result.run.run}.`);
      return 130;
    }
    const { stored } = result;
    const rows = stored.rows.map((r) => `${r.type}: ${groupDigits(r.count)}`);
    const extra = [
      `  items stored    ${rows.length ? `${rows.join(', ')} rows` : 'none'} (${stored.duplicatesMerged} duplicates merged${stored.errors ? `, ${stored.errors} errors recorded` : ''})`,
      `  items are in    ${stored.location}`,
      ...exportHints(taskFile, stored.rows.filter((r) => r.count > 0).map((r) => r.type)),
    ];
    extra.push(...summaryChangeLines(result.summary, taskFile));
    if (!result.summary) extra.push('  (another process finalized this run)');
    if (stored.errors) extra.push(`  see the errors  crawl-studio errors ${taskFile}`);
    extra.push(...(await storeWarnings(task, taskFile)));
    for (const line of summaryLines(result.status, result.durationMs, extra, task)) console.log(line);
    return 0;
  } finally {
    // The handlers stay until the end: a second Ctrl-C during this cleanup still quits cleanly.
    await redis.release();
    clearTimeout(deadline);
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

/**
 * What to run to export the types the store holds: CSV holds one item type, so several get one CSV each, or JSONL
 * for all. The task's types would suggest an export that fails for a type none of whose items was stored.
 */
function exportHints(taskFile: string, types: string[]): string[] {
  const distinct = [...new Set(types)];
  if (distinct.length === 0) return [];
  if (distinct.length === 1) return [`  export them     crawl-studio export ${taskFile} --format csv --out items.csv`];
  return [
    `  export them     crawl-studio export ${taskFile} --format jsonl --out items.jsonl   (every type, each row with _type)`,
    ...distinct.map((t) => `                  crawl-studio export ${taskFile} --type ${t} --format csv --out ${t}.csv`),
  ];
}

function progressPrinter(): (p: Progress) => void {
  const tty = process.stdout.isTTY;
  let lastPrint = 0;
  return ({ status, pagesPerSec, elapsedMs, backlog }) => {
    const line = progressLine(status, pagesPerSec, elapsedMs, backlog);
    if (tty) process.stdout.write(`\r\x1b[2K${line}`);
    else if (Date.now() - lastPrint > 2000) {
      lastPrint = Date.now();
      process.stdout.write(line + '\n');
    }
  };
}

async function cmdWriter(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({ args, allowPositionals: true, options: REDIS_FLAG_SPEC });
  if (positionals.length !== 1) throw new UsageError('writer takes one task file');
  return runCrawl(positionals[0]!, { join: true, workers: 0, concurrency: 1, redis: redisTargetFrom(values), fresh: false });
}

async function withQueue<T>(taskFile: string, redisFlag: string | undefined, fn: (q: CrawlQueue, task: Awaited<ReturnType<typeof loadTaskFile>>, redis: ReturnType<typeof connectRedis>) => Promise<T>): Promise<T> {
  const task = await loadTaskFile(taskFile);
  const choice = await chooseRedis(redisFlag, task.file, { keepRunning: true });
  const redis = connectRedis(choice.url);
  const q = new CrawlQueue(redis, task.name);
  try {
    await q.loadLayout();
    return await fn(q, task, redis);
  } finally {
    await q.close();
    redis.disconnect();
  }
}

/** Lines of `enqueue --file` sent to Redis per call: big enough to amortise round trips, small enough to stream. */
const ENQUEUE_BATCH = 1_000;

async function cmdEnqueue(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: { ...REDIS_FLAG_SPEC, force: { type: 'boolean' }, file: { type: 'string', short: 'f' }, rule: { type: 'string' } },
  });
  if (values.file !== undefined) {
    if (positionals.length !== 1) throw new UsageError('enqueue --file takes a task file and no URL arguments');
    return enqueueFile(positionals[0]!, values.file, { redis: redisTargetFrom(values), force: values.force, rule: values.rule });
  }
  if (positionals.length < 2) throw new UsageError('enqueue takes a task file and at least one URL (or --file FILE, - for stdin)');
  const [taskFile, ...urls] = positionals;
  return withQueue(taskFile!, redisTargetFrom(values), async (q, task) => {
    if (values.rule !== undefined && !task.rules.some((r) => r.name === values.rule)) throw new UsageError(`no rule '${values.rule}' in ${task.file}`);
    const results = await q.enqueueUrls(task, urls, { force: values.force, rule: values.rule });
    // Shown redacted: a URL with `user:password@` is refused, and its password is not printed either.
    for (const r of results) console.log(`${r.outcome.padEnd(9)} ${redactUrl(r.url)}${r.reason ? ` (${r.reason}${r.reason === 'credentials' ? `: ${CREDENTIALS_HINT}` : ''})` : ''}`);
    return results.some((r) => r.outcome === 'invalid') ? 1 : 0;
  });
}

/**
 * `enqueue --file`: one URL a line (blank lines and `#` comments skipped), from a file or stdin (`-`), read as a
 * stream and sent in batches through the frontier's discovery, so a list of millions is never held whole and its
 * URLs are deduplicated, scoped and routed like links found on pages. Bad lines are reported with their number.
 */
async function enqueueFile(taskFile: string, file: string, o: { redis?: string; force?: boolean; rule?: string }): Promise<number> {
  return withQueue(taskFile, o.redis, async (q, task) => {
    if (o.rule !== undefined && !task.rules.some((r) => r.name === o.rule)) throw new UsageError(`no rule '${o.rule}' in ${task.file}`);
    const input = file === '-' ? process.stdin : createReadStream(file);
    const name = file === '-' ? '<stdin>' : file;
    const opened = new Promise<void>((res, rej) => {
      if (file === '-') return res();
      input.once('open', () => res());
      input.once('error', (err: NodeJS.ErrnoException) => rej(new Error(`${file}: cannot read (${err.code ?? err.message})`)));
    });
    await opened;
    const counts = { enqueued: 0, duplicate: 0, limit: 0, invalid: 0 };
    const dropped: Record<string, number> = {};
    let batch: { line: number; url: string }[] = [];
    const flush = async () => {
      if (batch.length === 0) return;
      const lines = batch;
      batch = [];
      const lineOf = new Map<string, number>();
      for (const b of lines) if (!lineOf.has(b.url)) lineOf.set(b.url, b.line);
      for (const r of await q.enqueueUrls(task, lines.map((b) => b.url), { force: o.force, rule: o.rule, scoped: true })) {
        if (r.outcome === 'dropped') dropped[r.reason!] = (dropped[r.reason!] ?? 0) + 1;
        else counts[r.outcome]++;
        if (r.outcome === 'invalid') {
          const shown = redactUrl(r.url);
          const hint = r.reason === 'credentials' ? `; ${CREDENTIALS_HINT}` : '';
          console.error(`${name}:${lineOf.get(r.url) ?? '?'}: ${r.reason} (${DROP_REASONS[r.reason!] ?? 'refused'}${hint}): ${shown.length > 200 ? `${shown.slice(0, 200)}… (${groupDigits(shown.length)} characters)` : shown}`);
        }
      }
    };
    let n = 0;
    for await (const raw of createInterface({ input, crlfDelay: Infinity })) {
      n++;
      const url = raw.trim();
      if (url === '' || url.startsWith('#')) continue;
      batch.push({ line: n, url });
      if (batch.length >= ENQUEUE_BATCH) await flush();
    }
    await flush();
    const drops = Object.entries(dropped).sort((a, b) => b[1] - a[1]);
    const total = drops.reduce((a, [, v]) => a + v, 0);
    console.log(
      `${groupDigits(counts.enqueued)} enqueued, ${groupDigits(counts.duplicate)} already seen` +
        (counts.limit ? `, ${groupDigits(counts.limit)} over scope.maxPages` : '') +
        `, ${groupDigits(total)} dropped${drops.length ? ` (${drops.map(([r, v]) => `${r}: ${groupDigits(v)}`).join(', ')})` : ''}` +
        `, ${groupDigits(counts.invalid)} bad line${counts.invalid === 1 ? '' : 's'}`,
    );
    return counts.invalid > 0 ? 1 : 0;
  });
}

async function cmdStatus(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({ args, allowPositionals: true, options: { ...REDIS_FLAG_SPEC, json: { type: 'boolean' } } });
  if (positionals.length !== 1) throw new UsageError('status takes one task file');
  return withQueue(positionals[0]!, redisTargetFrom(values), async (_q, task, redis) => {
    const status = await readTaskStatus(redis, task.name);
    if (values.json) {
      console.log(JSON.stringify(status, null, 2));
      return 0;
    }
    if (!status.run) {
      console.log(`${status.task}: never run on this Redis`);
      return 0;
    }
    const elapsed = runElapsedMs(status.run, Date.now());
    console.log(`${status.task}: run ${status.run.run}, ${status.run.state}${status.isPaused ? ' (paused)' : ''}, started ${new Date(status.run.startedAt).toISOString()}`);
    console.log(progressLine(status, 0, elapsed));
    console.log(droppedLine(status.stats).trimStart());
    for (const line of droppedReasonLines(status.stats)) console.log(line);
    if (status.stats) for (const w of dropWarnings(status.stats, task)) console.log(w.trimStart());
    return 0;
  });
}

async function cmdExport(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      format: { type: 'string', short: 'f' }, type: { type: 'string' }, out: { type: 'string', short: 'o' }, store: { type: 'string' }, meta: { type: 'boolean' }, 'csv-raw': { type: 'boolean' },
      changes: { type: 'boolean' }, since: { type: 'string' },
    },
  });
  if (positionals.length !== 1) throw new UsageError('export takes one task file');
  const format = (values.format ?? 'jsonl') as ExportFormat;
  if (!['jsonl', 'csv', 'json'].includes(format)) throw new UsageError(`--format must be jsonl, csv or json, not '${format}'`);
  const task = await loadTaskFile(positionals[0]!);
  const store = await openStore(values.store ?? storeUrlFor(task), { task: task.name, cwd: dirname(task.file) });
  try {
    // `export | head -1`: a reader that closed the pipe has all it wanted, so the export ends quietly, exit 0.
    if (!values.out) process.stdout.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'EPIPE') process.exit(0);
      throw err;
    });
    const out = values.out ? createWriteStream(values.out) : process.stdout;
    let res;
    try {
      res = values.changes
        ? await exportChangesOf(store, task.name, { format, since: values.since, type: values.type, out, csvRaw: values['csv-raw'] ?? false })
        : await exportItems(store, { format, type: values.type, out, meta: values.meta ?? false, csvRaw: values['csv-raw'] ?? false });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EPIPE' && !values.out) return 0;
      throw err;
    }
    if (values.out) {
      await new Promise<void>((resolve, reject) => (out as import('node:fs').WriteStream).end((err?: Error | null) => (err ? reject(err) : resolve())));
      console.error(`exported ${groupDigits(res.items)} ${values.changes ? 'changes' : 'items'} (${res.types.join(', ')}) from ${redactUrl(store.location)} to ${values.out}`);
    }
    return 0;
  } finally {
    await store.close();
  }
}

async function cmdTest(args: string[]): Promise<number> {
  if (args.length !== 1) throw new UsageError('test takes one task file');
  // The same fixture check as the editor's "Test Task": pages saved with "Save Page as Fixture" re-extracted.
  const report = await testTaskFile(args[0]!);
  console.log(formatTestReport(report));
  return report.ok ? 0 : 1;
}

/**
 * `fixture save`: the editor's "Save Page as Fixture" from the terminal, through the same saveFixture (one file
 * format, one implementation), so `crawl-studio test` can run in CI without anyone opening the editor.
 */
async function cmdFixture(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({ args, allowPositionals: true, options: { rule: { type: 'string' } } });
  if (positionals[0] !== 'save' || positionals.length !== 3) throw new UsageError('fixture save takes a task file and a URL');
  const [, taskFile, url] = positionals as [string, string, string];
  const task = await loadTaskFile(taskFile);
  const start = task.start.find((s) => s.url === url || s.url === new URL(url).href);
  const rule = values.rule ?? start?.rule ?? routeRule(task, url, null)?.name ?? task.rules[0]!.name;
  if (!task.rules.some((r) => r.name === rule)) throw new UsageError(`no rule '${rule}' in ${task.file}`);
  if (task.rules.find((r) => r.name === rule)!.browser) {
    console.error(`note: rule '${rule}' renders in a browser; this fixture is the page as fetched (save rendered pages from the editor)`);
  }
  // Sent as a worker sends the rule's pages: its headers (an API key from the environment) over the task's.
  const opts = ruleOptions(task, fetchOptions(task))(task.rules.find((r) => r.name === rule)!);
  if (opts instanceof Error) throw opts;
  const page = await fetchPage(url, { ...opts, keepNonHtml: true });
  if (!page.isHtml && !isJsonContentType(page.contentType)) throw new Error(`${url} is neither HTML nor JSON (${page.contentType ?? 'no content type'}, HTTP ${page.status}): a fixture is a page or an API response`);
  const json = await saveFixture(task.file, task, { url, finalUrl: page.finalUrl, html: page.body, status: page.status, fetchedAt: new Date().toISOString(), contentType: page.contentType }, rule, 0);
  const saved = JSON.parse(readFileSync(json, 'utf8')) as import('../core/designer/fixtures').Fixture;
  console.log(`saved ${json} (rule ${rule}, HTTP ${page.status}): ${saved.expected.items.length} items, ${saved.expected.links.length} links, ${saved.expected.problems.length} problems`);
  return 0;
}

async function withStore<T>(task: Awaited<ReturnType<typeof loadTaskFile>>, storeFlag: string | undefined, fn: (store: Awaited<ReturnType<typeof openStore>>) => Promise<T>): Promise<T> {
  const store = await openStore(storeFlag ?? storeUrlFor(task), { task: task.name, cwd: dirname(task.file) });
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}

/** The summary's field warnings; a store that cannot be read now costs the warnings, never the run's exit status. */
async function storeWarnings(task: Awaited<ReturnType<typeof loadTaskFile>>, taskFile: string): Promise<string[]> {
  try {
    const warnings = await withStore(task, undefined, async (store) => emptyFieldWarnings(task, await qualityReports(store)));
    return warnings.map((w) => `  ${w}`).concat(warnings.length ? [`  field quality   crawl-studio quality ${taskFile}`] : []);
  } catch (err) {
    return [`  (field quality not checked: ${err instanceof Error ? err.message : String(err)})`];
  }
}

async function cmdQuality(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({ args, allowPositionals: true, options: { store: { type: 'string' } } });
  if (positionals.length !== 1) throw new UsageError('quality takes one task file');
  const task = await loadTaskFile(positionals[0]!);
  return withStore(task, values.store, async (store) => {
    const reports = await qualityReports(store);
    for (const line of qualityTable(task, reports)) console.log(line);
    const errors = await store.countErrors();
    if (errors) console.log(`${groupDigits(errors)} errors recorded: crawl-studio errors ${positionals[0]}`);
    return 0;
  });
}

async function cmdErrors(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({ args, allowPositionals: true, options: { store: { type: 'string' }, limit: { type: 'string' } } });
  if (positionals.length !== 1) throw new UsageError('errors takes one task file');
  const limit = positiveInt(values.limit, 'limit', 50);
  const task = await loadTaskFile(positionals[0]!);
  return withStore(task, values.store, async (store) => {
    const total = await store.countErrors();
    console.log(`${groupDigits(total)} error${total === 1 ? '' : 's'} recorded in ${redactUrl(store.location)}${total > limit ? ` (the first ${groupDigits(limit)}; --limit N for more)` : ''}`);
    for (const e of await store.readErrors({ offset: 0, limit })) {
      const what = [e.rule && `rule ${e.rule}`, e.type && `${e.type}${e.key ? ` ${e.key}` : ''}`].filter(Boolean).join(', ');
      console.log(`${e.kind.padEnd(8)} ${e.url ?? '-'}${what ? ` (${what})` : ''}: ${e.message}`);
    }
    return 0;
  });
}

/** The screenshots of the current run (`browser: { screenshot: failure | always }`): listed, or one written to a file. */
async function cmdScreenshot(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({ args, allowPositionals: true, options: { redis: { type: 'string' }, out: { type: 'string', short: 'o' } } });
  if (positionals.length < 1 || positionals.length > 2) throw new UsageError('screenshot takes a task file and, to save one, its URL');
  const [taskFile, url] = positionals as [string, string | undefined];
  return withQueue(taskFile, values.redis, async (q, task, redis) => {
    const run = (await q.currentRun())?.run;
    if (!run) {
      console.log(`${task.name}: never run on this Redis`);
      return 0;
    }
    if (url === undefined) {
      const urls = await screenshotUrls(redis, task.name, run);
      if (urls.length === 0) console.log(`no screenshots in run ${run} (a rule keeps them with browser: { screenshot: failure } or always)`);
      for (const u of urls) {
        const shot = await readScreenshot(redis, task.name, run, u);
        if (shot) console.log(`${new Date(shot.facts.at).toISOString()}  ${u}  ${shot.facts.why}`);
      }
      return 0;
    }
    const shot = await readScreenshot(redis, task.name, run, url);
    if (!shot) {
      console.error(`no screenshot of ${url} in run ${run} (list them: crawl-studio screenshot ${taskFile})`);
      return 1;
    }
    let file: string;
    if (values.out) writeFileSync((file = values.out), shot.jpeg);
    else file = await writeScreenshot(task.file, task.name, url, shot.jpeg);
    console.log(`${file}  (${shot.facts.finalUrl === url ? url : `${url} -> ${shot.facts.finalUrl}`}, ${new Date(shot.facts.at).toISOString()}: ${shot.facts.why})`);
    return 0;
  });
}

async function cmdServeDemo(args: string[]): Promise<number> {
  const { values } = parseArgs({ args, options: { port: { type: 'string' } } });
  const site = await serveSite(DEMO_SITE, values.port ? Number(values.port) : DEMO_PORT);
  console.log(`Demo bookshop on ${site.url}/ (Ctrl-C to stop)`);
  await new Promise<void>((r) => process.once('SIGINT', () => r()));
  await site.close();
  return 0;
}

async function cmdDemo(args: string[]): Promise<number> {
  const { values } = parseArgs({ args, options: { dir: { type: 'string' }, workers: { type: 'string' } } });
  const dir = resolve(values.dir ?? 'crawl-demo');
  mkdirSync(dir, { recursive: true });
  const taskFile = join(dir, 'books.crawl.yaml');
  if (!existsSync(taskFile)) writeFileSync(taskFile, demoTaskText);
  let site;
  try {
    site = await serveSite(DEMO_SITE, DEMO_PORT);
  } catch (err) {
    throw new Error(`cannot serve the demo site on 127.0.0.1:${DEMO_PORT} (${(err as NodeJS.ErrnoException).code}); is another demo running?`);
  }
  console.log(`Demo bookshop on ${site.url}/ — crawling it with ${taskFile}`);
  try {
    return await runCrawl(taskFile, { workers: positiveInt(values.workers, 'workers', defaultWorkers()), concurrency: DEFAULT_CONCURRENCY, redis: undefined, fresh: true });
  } finally {
    await site.close();
  }
}

if (require.main === module) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (err: unknown) => {
      if (err instanceof TaskFileError) {
        for (const d of err.diagnostics) console.error(formatDiagnostic(d));
        process.exit(2);
      }
      if (err instanceof UsageError || err instanceof MonitorUsageError || err instanceof ChangesUsageError) {
        console.error(`crawl-studio: ${err.message}\n\n${USAGE}`);
        process.exit(2);
      }
      if (err instanceof RedisNotFoundError) {
        console.error(`crawl-studio: ${err.message}`);
        process.exit(3);
      }
      if (err instanceof RedisTargetError) {
        console.error(`crawl-studio: ${err.message}\n(crawl-studio --help: the forms of REDIS)`);
        process.exit(2);
      }
      console.error(`crawl-studio: ${err instanceof Error ? err.message : String(err)}`);
      process.exit(1);
    },
  );
}

