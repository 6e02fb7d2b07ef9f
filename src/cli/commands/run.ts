import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { workerExitReport } from '../../run/workerExit';
import { join, resolve } from 'node:path';
import { loadTaskFile } from '../../workspace/taskFile';
import { DEMO_PORT, DEMO_SITE, serveSite } from '../../demo/site';
import {
  concurrencyFlag,
  DEFAULT_CONCURRENCY,
  defaultWorkers,
  maxMemoryFlag,
  optionalPositiveInt,
  positiveInt,
  redisTargetFrom,
  workersFlag,
} from '../../worker/args';
import { hasWorkers, type Scaled } from '../../core/autoscale/range';
import { launchCrawl, type CrawlLaunch, type LaunchOptions, type LaunchResult } from '../../run/launcher';
import { chooseRedis, type RedisChoice, type RedisChoiceOptions } from '../../run/redisChoice';
import { checkRedis, waitForRedis } from '../../redis/check';
import { STOPPED_INCOMPLETE } from '../../core/history/diff';
import { waitForFirstRun } from '../../run/firstRun';
import { formatDuration, groupDigits } from '../../core/units';
import demoTaskText from '../../../examples/books.crawl.yaml';
import { storedLine, summaryLines } from '../format';
import { runOutput, type RunOutput } from '../runOutput';
import { LOG_FORMAT_ENV, parseLogFormat, type LogFormat } from '../../core/logLine';
import { emptyFieldWarnings, qualityReports } from '../quality';
import { withQueueAt, withStore, type LoadedTask } from '../context';
import { readRunFailures, type RunFailures } from '../../observe/failures';
import { runElapsedMs } from '../../observe/figures';
import { command, UsageError, type CommandSpec } from '../spec';
import { ALLOW_SCRIPTS_OPTION, LOG_FORMAT_OPTION, REDIS_OPTIONS, SCALE_OPTIONS } from '../options';
import { EXIT } from '../exitCodes';
import { summaryChangeLines } from './changes';

// `run`, `writer` and `demo`: a crawl driven from the terminal, through the launcher the editor uses.

const RUN_DETAILS = `What run does depends on the task's current run on this Redis: unfinished (interrupted by Ctrl-C, a crash or a
kill) -> it is resumed: its queue, dedup state and counters continue; finished or stopped, or none -> a new run
starts from the start URLs and fetches every page again. --fresh always starts a new run. A task that another live
\`run\` or editor drives is refused (add workers to it with \`worker\`, watch it with \`status\`), unless --force.
Without a Redis option (nor $CRAWL_STUDIO_REDIS) a private redis-server is started for the project, with its data
in .crawl/redis next to the task file, so a crawl survives restarts.`;

export const runCommand: CommandSpec = command({
  name: 'run',
  args: '<task.crawl.yaml>',
  summary: 'run a crawl: enqueue the start URLs, run local workers and the store writer, print a summary',
  details: RUN_DETAILS,
  options: {
    workers: {
      type: 'string',
      short: 'w',
      value: 'N|auto|MIN..MAX',
      help: "local worker processes (default: one per two CPU cores); auto or a range scales them; 0: none, the fleet's workers fetch",
    },
    concurrency: {
      type: 'string',
      short: 'c',
      value: 'N|auto|MIN..MAX',
      help: 'requests each worker has in flight (default 16); auto or a range scales them (README, Autoscaling)',
    },
    ...SCALE_OPTIONS,
    ...REDIS_OPTIONS,
    fresh: { type: 'boolean', help: 'start a new run even when the current one is unfinished' },
    force: { type: 'boolean', help: 'take the run over from the process that drives it' },
    'lock-duration': {
      type: 'string',
      value: 'MS',
      help: "how long a page's job stays locked to its worker without a renewal",
    },
    'stalled-interval': { type: 'string', value: 'MS', help: 'how often stalled jobs are looked for' },
    browser: { type: 'string', value: 'PATH', help: "the Chromium that renders `browser` rules' pages" },
    ...ALLOW_SCRIPTS_OPTION,
    ...LOG_FORMAT_OPTION,
  },
  run(values, positionals) {
    if (positionals.length !== 1) throw new UsageError('run takes one task file', runCommand);
    return runCrawl(positionals[0]!, {
      workers: workersFlag(values.workers),
      concurrency: concurrencyFlag(values),
      maxMemoryBytes: maxMemoryFlag(values['max-memory']),
      redis: redisTargetFrom(values),
      fresh: values.fresh ?? false,
      force: values.force ?? false,
      lockDurationMs: optionalPositiveInt(values['lock-duration'], 'lock-duration'),
      stalledIntervalMs: optionalPositiveInt(values['stalled-interval'], 'stalled-interval'),
      browserPath: values.browser,
      allowScripts: values['allow-scripts'] ?? false,
      logFormat: logFormatOf(values['log-format'], runCommand),
    });
  },
});

export const writerCommand: CommandSpec = command({
  name: 'writer',
  args: '<task.crawl.yaml>',
  summary: "store a run's items from this machine and finalize the run when it drains (no workers)",
  options: { ...REDIS_OPTIONS, ...LOG_FORMAT_OPTION },
  run(values, positionals) {
    if (positionals.length !== 1) throw new UsageError('writer takes one task file', writerCommand);
    return runCrawl(positionals[0]!, {
      join: true,
      workers: 0,
      concurrency: 1,
      redis: redisTargetFrom(values),
      fresh: false,
      logFormat: logFormatOf(values['log-format'], writerCommand),
    });
  },
});

export const demoCommand = command({
  name: 'demo',
  args: '',
  summary: 'write the demo task, serve the demo bookshop and crawl it',
  options: {
    dir: { type: 'string', value: 'DIR', help: 'where the demo task file goes (default ./crawl-demo)' },
    workers: { type: 'string', short: 'w', value: 'N', help: 'local worker processes' },
  },
  async run(values) {
    const dir = resolve(values.dir ?? 'crawl-demo');
    mkdirSync(dir, { recursive: true });
    const taskFile = join(dir, 'books.crawl.yaml');
    if (!existsSync(taskFile)) writeFileSync(taskFile, demoTaskText);
    let site;
    try {
      site = await serveSite(DEMO_SITE, DEMO_PORT);
    } catch (err) {
      throw new Error(
        `cannot serve the demo site on 127.0.0.1:${DEMO_PORT} (${(err as NodeJS.ErrnoException).code}); is another demo running?`,
        { cause: err },
      );
    }
    console.log(`Demo bookshop on ${site.url}/ — crawling it with ${taskFile}`);
    try {
      return await runCrawl(taskFile, {
        workers: positiveInt(values.workers, 'workers', defaultWorkers()),
        concurrency: DEFAULT_CONCURRENCY,
        redis: undefined,
        fresh: true,
      });
    } finally {
      await site.close();
    }
  },
});

export const serveDemoCommand = command({
  name: 'serve-demo',
  args: '',
  summary: 'serve the demo bookshop until Ctrl-C',
  options: { port: { type: 'string', value: 'N', help: `the port on 127.0.0.1 (default ${DEMO_PORT})` } },
  async run(values) {
    const site = await serveSite(DEMO_SITE, values.port ? Number(values.port) : DEMO_PORT);
    console.log(`Demo bookshop on ${site.url}/ (Ctrl-C to stop)`);
    await new Promise<void>((r) => process.once('SIGINT', () => r()));
    await site.close();
    return EXIT.OK;
  },
});

/** --log-format, a wrong value being a usage error of the command. */
function logFormatOf(value: string | undefined, spec: CommandSpec): LogFormat {
  try {
    return parseLogFormat(value);
  } catch (err) {
    throw new UsageError((err as Error).message, spec);
  }
}

interface RunFlags {
  /** Watch and finalize the current run without starting one (the `writer` command). */
  join?: boolean;
  workers: number | Scaled;
  concurrency: number | Scaled;
  maxMemoryBytes?: number;
  redis: string | undefined;
  fresh: boolean;
  /** Drive the task even though another live process drives its run. */
  force?: boolean;
  lockDurationMs?: number;
  stalledIntervalMs?: number;
  /** The browser for `browser` rules (--browser). */
  browserPath?: string;
  /** `browser.actions` scripts may run (--allow-scripts). */
  allowScripts?: boolean;
  /** --log-format: lines for people (default) or one JSON object a line. */
  logFormat?: LogFormat;
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
  const task = await loadTaskFile(taskFile, { allowScripts: flags.allowScripts ?? false });
  const out = runOutput(flags.logFormat ?? 'human', task.name);
  // The workers this run starts log in the same form (worker/main.ts reads it).
  if (out.format === 'json') process.env[LOG_FORMAT_ENV] = 'json';
  // A private redis-server lost for good stops the run, which is launched only once Redis is chosen.
  const redisLoss: { error: Error | null; launch: CrawlLaunch | null } = { error: null, launch: null };
  const redis = await chooseRedis(flags.redis, task.file, {
    watch: privateRedisWatch(out, (err) => {
      redisLoss.error = err;
      redisLoss.launch?.stop();
    }),
  });
  out.say('info', `Redis: ${redis.describe()}`, { event: 'redis' });
  try {
    // `run` fails fast with the target and the cause; `writer`, long-lived like a worker, waits and says so.
    if (flags.join) {
      await waitForRedis(redis.url, (line) => out.say('warn', line, { event: 'redis-wait' }));
      await waitForFirstRun(redis.url, task, (line) => out.say('info', line, { event: 'run-wait' }));
    } else await checkRedis(redis.url, undefined, 'crawl');
  } catch (err) {
    await redis.release();
    throw err;
  }
  const launch: CrawlLaunch = launchCrawl(launchOptions(task, flags, out, redis.url, () => launch));
  redisLoss.launch = launch;
  if (!flags.join && !hasWorkers(flags.workers))
    out.say('info', noLocalWorkers(taskFile, redis), { event: 'run-no-workers' });
  sayWorkerEvents(launch, out);
  const signals = stopOnSignals(launch, out, redis, flags.join === true);
  try {
    const result = await launch.done;
    if (out.format === 'human') process.stdout.write('\n');
    if (redisLoss.error) throw redisLoss.error;
    // A writer joined whatever run was current and served each run after it: it resumed nothing.
    if (flags.join && signals.interrupted()) {
      out.say('info', writerEndLine(result), { event: 'writer-stopped', run: result.run.run });
      return EXIT.INTERRUPTED;
    }
    sayWhichRun(out, result, task, flags.fresh);
    if (signals.interrupted()) {
      out.say('info', `Stopped. Run the same command again to resume run ${result.run.run}.`, {
        event: 'run-stopped',
        run: result.run.run,
      });
      return EXIT.INTERRUPTED;
    }
    // Ended elsewhere (the web monitor's Stop run, an editor's Stop Crawl: CrawlQueue.stopRun): what it did, said so.
    if (result.outcome === 'stopped')
      out.say('info', stoppedElsewhere(result.run.run), { event: 'run-stopped', run: result.run.run });
    await printSummary(out, result, task, taskFile, redis.url);
    return EXIT.OK;
  } finally {
    // The handlers stay until the end: a second Ctrl-C during this cleanup still quits cleanly.
    await redis.release();
    signals.dispose();
  }
}

/** What the launcher is given: the flags, and where each of its events is said. */
function launchOptions(
  task: LoadedTask,
  flags: RunFlags,
  out: RunOutput,
  redisUrl: string,
  launch: () => CrawlLaunch,
): LaunchOptions {
  return {
    task,
    redisUrl,
    workers: flags.workers,
    concurrency: flags.concurrency,
    maxMemoryBytes: flags.maxMemoryBytes,
    onScale: (reason) => out.say('info', reason, { event: 'scale', newline: true }),
    workerScript: join(__dirname, 'worker.js'),
    browserPath: flags.browserPath,
    allowScripts: flags.allowScripts,
    fresh: flags.fresh,
    force: flags.force,
    mode: flags.join ? 'join' : 'start',
    lockDurationMs: flags.lockDurationMs,
    stalledIntervalMs: flags.stalledIntervalMs,
    onProgress: (p) => out.progress(p),
    onStoreOpen: (store) => out.say('info', `Store: ${store.store.location}`, { event: 'store-open' }),
    onStoreMessage: (msg) => out.say('warn', `store: ${msg}`, { event: 'store', newline: true }),
    onRedisWarning: (msg) => out.say('warn', `redis: ${msg}`, { event: 'redis-eviction', newline: true }),
    onRedisMessage: (msg) =>
      out.say('warn', `redis: ${msg}`, { event: msg.startsWith('lost') ? 'redis-lost' : 'redis-back', newline: true }),
    onRunStopped: (run) =>
      out.say(
        'info',
        `${stoppedElsewhere(run.run)} The writer stored what it left and waits for the task's next run.`,
        {
          event: 'run-stopped',
          run: run.run,
          newline: true,
        },
      ),
    onStopWaiting: (run, pages, boundMs) =>
      out.say(
        'info',
        `Run ${run.run} was stopped: waiting for ${pages} page${pages === 1 ? '' : 's'} other workers are still fetching ` +
          `(at most ${boundMs / 1000} s), so that what they find is counted with the run.`,
        { event: 'run-stop-waiting', run: run.run, pages, newline: true },
      ),
    onRunFinished: (run, status, store) => {
      if (!task.schedule && !flags.join) return;
      if (out.format === 'human') process.stdout.write('\n');
      out.summary(
        summaryLines(
          status,
          // The run's own duration, as every view gives it (paused and interrupted time left out).
          runElapsedMs(status.run ?? run, Date.now()),
          [`  items are in    ${store.store.location}`],
          task,
        ),
        status,
        null,
      );
      void launch()
        .session.crawl.nextScheduledRun()
        .then(
          (next) =>
            next &&
            out.say('info', `Next run at ${new Date(next).toISOString()} (Ctrl-C to stop).`, {
              event: 'run-scheduled',
            }),
        );
    },
    onWorkerExit: (pid, code, signal, expected, lines) => {
      if (!expected)
        out.say('error', workerExitReport(pid, code, signal, lines), { event: 'worker-exit', newline: true });
    },
  };
}

/** The local workers' lines, and the pages a dead worker left, each on its own line. */
function sayWorkerEvents(launch: CrawlLaunch, out: RunOutput): void {
  launch.supervisor.on('log', (pid, line) => out.workerLine(pid, line));
  // On its own line, as the exit message: on a terminal the progress line has no newline.
  launch.supervisor.on('released', (pid, jobs) =>
    out.say('warn', `worker ${pid}: its ${jobs} unfinished page${jobs === 1 ? '' : 's'} went back to the queue`, {
      event: 'pages-released',
      newline: true,
    }),
  );
}

/**
 * Ctrl-C (or SIGTERM) stops the run gracefully, and quits it after STOP_DEADLINE_MS; a second Ctrl-C quits at once.
 * `dispose` takes the handlers away.
 */
function stopOnSignals(
  launch: CrawlLaunch,
  out: RunOutput,
  redis: RedisChoice,
  /** The `writer` command: it has no workers to wait for. */
  writerOnly: boolean,
): { interrupted: () => boolean; dispose: () => void } {
  let interrupted = false;
  let quitting = false;
  let deadline: NodeJS.Timeout | undefined;
  const quit = () => {
    quitting = true;
    void launch.kill(QUIT_RELEASE_WAIT_MS).finally(() => {
      // The private redis-server may be gone already (stopped meanwhile, or killed with the terminal's group):
      // a second Ctrl-C must end quietly, not with a "kill ESRCH" stack trace.
      redis.abandon();
      process.exit(EXIT.INTERRUPTED);
    });
  };
  const onSignal = () => {
    if (quitting) process.exit(EXIT.INTERRUPTED);
    if (interrupted) {
      // Quit now: nothing this process started may outlive it. Killed workers' pages return to the queue (released
      // as they die, so the next run has them at once; not waited for long); a private redis-server gets SIGTERM,
      // which writes its append-only file, so the next run resumes.
      quit();
      return;
    }
    interrupted = true;
    out.say(
      'info',
      writerOnly
        ? 'Stopping the writer (Ctrl-C again to quit now; items not stored yet stay in Redis for the next writer)…'
        : 'Stopping: letting workers finish their pages (Ctrl-C again to quit now; the crawl resumes on the next run)…',
      { event: 'run-stopping', newline: true },
    );
    launch.stop();
    deadline = setTimeout(() => {
      out.say(
        'error',
        `Still stopping after ${STOP_DEADLINE_MS / 1000} s (waiting for ${stillWaitingFor(launch)}): quitting now. ` +
          `Run the same command again to resume the run; items not stored yet stay in Redis for it.`,
        { event: 'run-quitting', newline: true },
      );
      quit();
    }, STOP_DEADLINE_MS);
    deadline.unref();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  return {
    interrupted: () => interrupted,
    dispose: () => {
      clearTimeout(deadline);
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    },
  };
}

/** A run this process drove or served, ended by a Stop made elsewhere (CrawlQueue.stopRun). */
function stoppedElsewhere(run: string): string {
  return `Run ${run} was stopped from elsewhere (the monitor's Stop run, \`crawl-studio stop\` or an editor's Stop Crawl): it does not resume; the next \`run\` begins a new one.`;
}

/** What a writer's Ctrl-C says of the run it was serving. */
function writerEndLine(result: LaunchResult): string {
  const run = result.run.run;
  switch (result.outcome) {
    case 'finished':
      return `Writer stopped after run ${run} finished.`;
    case 'stopped':
      return `Writer stopped. Run ${run} had been stopped: the next \`run\` begins a new one.`;
    case 'interrupted':
      return `Writer stopped while run ${run} goes on: items not stored yet stay in Redis for the next writer, or the \`run\` that drives it.`;
  }
}

/** Which run it was, said: "resumes" read as "continues after a finished run" in the README, and it never does. */
function sayWhichRun(out: RunOutput, result: LaunchResult, task: LoadedTask, fresh: boolean): void {
  if (result.resumed) {
    out.say(
      'info',
      `Resumed run ${result.run.run} started ${new Date(result.run.startedAt).toISOString()} (it had not finished).`,
      { event: 'run-resumed', run: result.run.run },
    );
    return;
  }
  // The first run of a task on this Redis replaces nothing: "fetched again" read as if an earlier crawl had run.
  if (result.replaced === null) {
    out.say('info', `New run ${result.run.run}${fresh ? ' (--fresh)' : ''}: the task's first on this Redis.`, {
      event: 'run-new',
      run: result.run.run,
    });
    return;
  }
  const again = task.request.conditional
    ? 'every page requested again, conditionally (request.conditional)'
    : 'every page fetched again';
  out.say(
    'info',
    `New run ${result.run.run}${fresh ? ' (--fresh)' : ''}, replacing run ${result.replaced}: ${again}; \`run\` resumes a run only while it is unfinished.`,
    { event: 'run-new', run: result.run.run, replaced: result.replaced },
  );
}

/** The private redis-server's events on their own lines; one that cannot be started again stops the run (issue 35, item 4). */
function privateRedisWatch(out: RunOutput, stop: (err: Error) => void): RedisChoiceOptions['watch'] {
  return {
    say: (message) => out.say('warn', `Redis: ${message}`, { event: 'redis-private', newline: true }),
    lost: (err) => {
      out.say('error', `Redis: ${err.message}; stopping the run`, { event: 'redis-private-lost', newline: true });
      stop(err);
    },
  };
}

/** What a graceful stop still waits for, said when it takes too long: never a store blamed for Redis (issue 35, item 4). */
/** `--workers 0`: who fetches the pages, and a private Redis that no other machine reaches. */
function noLocalWorkers(taskFile: string, redis: RedisChoice): string {
  if (redis.managed)
    return `No local worker (--workers 0), and this Redis is the project's private one, which only this machine reaches: give the fleet's Redis with --redis (or $CRAWL_STUDIO_REDIS) for its workers to fetch the pages.`;
  return `No local worker (--workers 0): the pages wait for \`crawl-studio worker ${taskFile}\` on the fleet's machines, against the same Redis.`;
}

function stillWaitingFor(launch: CrawlLaunch): string {
  const waits: string[] = [];
  const workers = launch.supervisor.list().length;
  if (workers > 0)
    waits.push(`${workers} worker${workers === 1 ? '' : 's'} to finish ${workers === 1 ? 'its' : 'their'} pages`);
  if (launch.session.redis.status !== 'ready')
    waits.push(`Redis, which does not answer (${launch.session.redis.status})`);
  if (waits.length === 0)
    waits.push(launch.store ? 'the store, which has not answered (a locked or hung database?)' : 'the store to open');
  return waits.join(', and for ');
}

/**
 * Items whose key the store had already seen (from an earlier batch or an earlier run), merged into that row. Not
 * "duplicates": on a re-crawl every item is one, which read as if the site repeated itself.
 */
function mergedText(n: number): string {
  return `${groupDigits(n)} item${n === 1 ? '' : 's'} of a key seen before, merged into its row`;
}

/** The summary of a run that drained: what it did, what the store holds from it, why pages failed. */
async function printSummary(
  out: RunOutput,
  result: LaunchResult,
  task: LoadedTask,
  taskFile: string,
  redisUrl: string,
): Promise<void> {
  const { stored } = result;
  const extra = [
    storedLine(
      stored.runRows,
      stored.rows,
      `${mergedText(stored.duplicatesMerged)}${stored.errors ? `, ${groupDigits(stored.errors)} errors recorded` : ''}`,
    ),
    `  items are in    ${stored.location}`,
    ...exportHints(
      taskFile,
      stored.rows.filter((r) => r.count > 0).map((r) => r.type),
    ),
    ...summaryChangeLines(
      result.outcome === 'stopped' && stored.changes
        ? { changes: { ...stored.changes, incomplete: STOPPED_INCOMPLETE } }
        : result.summary,
      taskFile,
    ),
  ];
  if (result.redisGoneMs > 0)
    extra.push(
      `  Redis was gone  ${formatDuration(result.redisGoneMs)} in all during the run (the crawl waited and went on)`,
    );
  if (!result.summary && result.outcome !== 'stopped') extra.push('  (another process finalized this run)');
  if (stored.errors) extra.push(`  see the errors  crawl-studio errors ${taskFile}`);
  extra.push(...(await storeWarnings(task, taskFile)));
  const failures = await runFailures(redisUrl, task.name, result.run.run);
  if (failures?.groups.length)
    extra.push(
      `  ${result.status.stats?.failed ? 'why, page by page' : 'skipped, page by page'}: crawl-studio failures ${taskFile}`,
    );
  const itemsStored = stored.runRows.reduce((a, r) => a + r.count, 0);
  out.summary(summaryLines(result.status, result.durationMs, extra, task, failures), result.status, failures, {
    itemsStored,
    durationMs: result.durationMs,
    redisGoneMs: result.redisGoneMs,
  });
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

/** The run's failures by reason for the summary; a Redis that cannot be read now costs the lines, not the exit status. */
async function runFailures(url: string, taskName: string, run: string): Promise<RunFailures | null> {
  try {
    return await withQueueAt(url, taskName, (q) => readRunFailures(q.parts, { run, limit: 1 }));
  } catch {
    return null;
  }
}

/** The summary's field warnings; a store that cannot be read now costs the warnings, never the run's exit status. */
async function storeWarnings(task: LoadedTask, taskFile: string): Promise<string[]> {
  try {
    const warnings = await withStore(task, undefined, async (store) =>
      emptyFieldWarnings(task, await qualityReports(store)),
    );
    return warnings
      .map((w) => `  ${w}`)
      .concat(warnings.length ? [`  field quality   crawl-studio quality ${taskFile}`] : []);
  } catch (err) {
    return [`  (field quality not checked: ${err instanceof Error ? err.message : String(err)})`];
  }
}
