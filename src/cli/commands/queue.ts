import { describeRunPhase, phaseWord } from '../../observe/runPhase';
import { createReadStream, writeFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { redisTargetFrom } from '../../worker/args';
import { workerMain } from '../../worker/main';
import { groupDigits } from '../../core/units';
import { DROP_REASONS } from '../../core/task/dropReasons';
import { CREDENTIALS_HINT } from '../../core/url/credentials';
import { redactUrl, type Redis } from '../../redis/connect';
import { readTaskStatus } from '../../observe/taskStatus';
import { figuresOf } from '../../observe/taskFigures';
import { readScreenshot, screenshotUrls } from '../../observe/screenshots';
import { writeScreenshot } from '../../workspace/screenshots';
import {
  droppedLine,
  droppedReasonLines,
  dropWarnings,
  etaLine,
  failureReasonLines,
  pageWarnings,
  progressLine,
} from '../format';
import { readRunFailures } from '../../observe/failures';
import { withQueue } from '../context';
import { waitingNote } from '../../observe/noWorker';
import { command, UsageError } from '../spec';
import { JSON_OPTION, REDIS_OPTIONS, WORKER_OPTIONS } from '../options';
import { EXIT } from '../exitCodes';
import { readTaskScaling, scalingLines } from '../../observe/scaling';
import { resizeWorker } from '../../frontier/fleet';

// Commands on a task's queue in Redis: worker, enqueue, status, resize, screenshot.

export const workerCommand = command({
  name: 'worker',
  args: '<task.crawl.yaml>...',
  summary: "fetch pages of the tasks' runs on a shared Redis, until Ctrl-C or SIGTERM",
  details: 'SIGTERM or Ctrl-C finishes the pages in flight; a second one leaves them to other workers.',
  options: WORKER_OPTIONS,
  async run(_values, positionals, argv) {
    if (positionals.length === 0) throw new UsageError('worker takes at least one task file', workerCommand);
    // The worker process (dist/worker.js) parses the same flags (worker/args.ts WORKER_FLAG_SPEC).
    await workerMain([...argv]);
    return new Promise<number>(() => undefined); // runs until a signal ends the process
  },
});

/** Lines of `enqueue --file` sent to Redis per call: big enough to amortise round trips, small enough to stream. */
const ENQUEUE_BATCH = 1_000;

export const enqueueCommand = command({
  name: 'enqueue',
  args: '<task.crawl.yaml> <url>... | <task.crawl.yaml> --file FILE',
  summary: "add URLs to a task's current run",
  details:
    'URLs given as arguments are queued whatever the scope; --file reads one URL a line (- for stdin), each deduplicated, scoped and routed like a link.',
  options: {
    ...REDIS_OPTIONS,
    force: { type: 'boolean', help: 'queue URLs already seen in the run' },
    file: { type: 'string', short: 'f', value: 'FILE', help: 'read URLs from FILE, one a line (- for stdin)' },
    rule: { type: 'string', value: 'R', help: "the rule their pages go to (default: routed by the rules' match)" },
  },
  async run(values, positionals) {
    if (values.file !== undefined) {
      if (positionals.length !== 1)
        throw new UsageError('enqueue --file takes a task file and no URL arguments', enqueueCommand);
      return enqueueFile(positionals[0]!, values.file, {
        redis: redisTargetFrom(values),
        force: values.force,
        rule: values.rule,
      });
    }
    if (positionals.length < 2)
      throw new UsageError(
        'enqueue takes a task file and at least one URL (or --file FILE, - for stdin)',
        enqueueCommand,
      );
    const [taskFile, ...urls] = positionals;
    return withQueue(taskFile!, redisTargetFrom(values), async (q, task, redis) => {
      if (values.rule !== undefined && !task.rules.some((r) => r.name === values.rule))
        throw new UsageError(`no rule '${values.rule}' in ${task.file}`);
      const results = await q.enqueueUrls(task, urls, { force: values.force, rule: values.rule });
      // Shown redacted: a URL with `user:password@` is refused, and its password is not printed either.
      for (const r of results)
        console.log(
          `${r.outcome.padEnd(9)} ${redactUrl(r.url)}${r.reason ? ` (${r.reason}${r.reason === 'credentials' ? `: ${CREDENTIALS_HINT}` : ''})` : ''}`,
        );
      if (results.some((r) => r.outcome === 'enqueued')) await sayNoWorker(redis, task.name, taskFile!);
      return results.some((r) => r.outcome === 'invalid') ? EXIT.FAILED : EXIT.OK;
    });
  },
});

/** After URLs went in: "No worker is running: …" when nothing takes the task's pages (observe/noWorker.ts). */
async function sayNoWorker(redis: Redis, task: string, taskFile: string): Promise<void> {
  const note = await waitingNote(redis, task, `\`crawl-studio run ${taskFile}\` resumes the run`);
  if (note) console.log(note.trimStart());
}

/**
 * `enqueue --file`: one URL a line (blank lines and `#` comments skipped), from a file or stdin (`-`), read as a
 * stream and sent in batches through the frontier's discovery, so a list of millions is never held whole and its
 * URLs are deduplicated, scoped and routed like links found on pages. Bad lines are reported with their number.
 */
async function enqueueFile(
  taskFile: string,
  file: string,
  o: { redis?: string; force?: boolean; rule?: string },
): Promise<number> {
  return withQueue(taskFile, o.redis, async (q, task, redis) => {
    if (o.rule !== undefined && !task.rules.some((r) => r.name === o.rule))
      throw new UsageError(`no rule '${o.rule}' in ${task.file}`);
    const input = file === '-' ? process.stdin : createReadStream(file);
    const name = file === '-' ? '<stdin>' : file;
    const opened = new Promise<void>((res, rej) => {
      if (file === '-') return res();
      input.once('open', () => res());
      input.once('error', (err: NodeJS.ErrnoException) =>
        rej(new Error(`${file}: cannot read (${err.code ?? err.message})`)),
      );
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
      for (const r of await q.enqueueUrls(
        task,
        lines.map((b) => b.url),
        { force: o.force, rule: o.rule, scoped: true },
      )) {
        if (r.outcome === 'dropped') dropped[r.reason!] = (dropped[r.reason!] ?? 0) + 1;
        else counts[r.outcome]++;
        if (r.outcome === 'invalid') {
          const shown = redactUrl(r.url);
          const hint = r.reason === 'credentials' ? `; ${CREDENTIALS_HINT}` : '';
          console.error(
            `${name}:${lineOf.get(r.url) ?? '?'}: ${r.reason} (${DROP_REASONS[r.reason!] ?? 'refused'}${hint}): ${shown.length > 200 ? `${shown.slice(0, 200)}… (${groupDigits(shown.length)} characters)` : shown}`,
          );
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
    if (counts.enqueued > 0) await sayNoWorker(redis, task.name, taskFile);
    return counts.invalid > 0 ? EXIT.FAILED : EXIT.OK;
  });
}

export const statusCommand = command({
  name: 'status',
  args: '<task.crawl.yaml>',
  summary: "the task's current run: state, progress, queue, failures and dropped links by reason",
  options: { ...REDIS_OPTIONS, ...JSON_OPTION },
  run(values, positionals) {
    if (positionals.length !== 1) throw new UsageError('status takes one task file', statusCommand);
    return withQueue(positionals[0]!, redisTargetFrom(values), async (q, task, redis) => {
      // The status and its figures (pages/s over its named window, ETA, counts) as every view shows them
      // (observe/taskFigures.ts): `figures` is what the monitor's API and the dashboard show.
      const now = Date.now();
      const status = await readTaskStatus(redis, task.name);
      const figures = await figuresOf(redis, status, now);
      if (values.json) {
        console.log(JSON.stringify({ ...status, figures }, null, 2));
        return EXIT.OK;
      }
      if (!status.run) {
        console.log(`${status.task}: never run on this Redis`);
        return EXIT.OK;
      }
      const elapsed = figures.elapsedMs;
      // The phase, not the meta's state: a run whose driver died says so (observe/runPhase.ts), as every view does.
      console.log(
        `${status.task}: run ${status.run.run}, ${phaseWord(status.phase)}, started ${new Date(status.run.startedAt).toISOString()}`,
      );
      // What nothing else on these lines says: who (if anyone) will finish it, or when its schedule runs it next.
      const next = (status.phase.kind === 'finished' || status.phase.kind === 'stopped') && status.phase.next !== null;
      if (status.phase.kind === 'interrupted' || (status.phase.kind === 'running' && !status.phase.driver) || next)
        console.log(describeRunPhase(status.phase));
      console.log(progressLine(status, figures.rate.pagesPerSec, elapsed, 0, figures.rate.label));
      console.log(etaLine(figures));
      if (status.stats?.failed) {
        const failures = await readRunFailures(q.parts, { run: status.run.run, limit: 1 });
        console.log(
          `pages failed ${groupDigits(status.stats.failed)} (why, page by page: crawl-studio failures ${positionals[0]})`,
        );
        for (const line of failureReasonLines(failures)) console.log(line);
      }
      console.log(droppedLine(status.stats).trimStart());
      for (const line of droppedReasonLines(status.stats)) console.log(line);
      if (status.stats)
        for (const w of [...dropWarnings(status.stats, task), ...pageWarnings(status.stats)])
          console.log(w.trimStart());
      for (const line of scalingLines(await readTaskScaling(redis, task.name), Date.now())) console.log(line);
      return EXIT.OK;
    });
  },
});

/** The screenshots of the current run (`browser: { screenshot: failure | always }`): listed, or one written to a file. */
export const screenshotCommand = command({
  name: 'screenshot',
  args: '<task.crawl.yaml> [url]',
  summary: "rendered pages' kept screenshots of the current run: listed, or one saved as a JPEG",
  options: {
    ...REDIS_OPTIONS,
    out: {
      type: 'string',
      short: 'o',
      value: 'FILE',
      help: 'where the JPEG goes (default .crawl/screenshots/<task>/)',
    },
  },
  run(values, positionals) {
    if (positionals.length < 1 || positionals.length > 2)
      throw new UsageError('screenshot takes a task file and, to save one, its URL', screenshotCommand);
    const [taskFile, url] = positionals as [string, string | undefined];
    return withQueue(taskFile, redisTargetFrom(values), async (q, task, redis) => {
      const run = (await q.currentRun())?.run;
      if (!run) {
        console.log(`${task.name}: never run on this Redis`);
        return EXIT.OK;
      }
      if (url === undefined) {
        const urls = await screenshotUrls(redis, task.name, run);
        if (urls.length === 0)
          console.log(
            `no screenshots in run ${run} (a rule keeps them with browser: { screenshot: failure } or always)`,
          );
        for (const u of urls) {
          const shot = await readScreenshot(redis, task.name, run, u);
          if (shot) console.log(`${new Date(shot.facts.at).toISOString()}  ${u}  ${shot.facts.why}`);
        }
        return EXIT.OK;
      }
      const shot = await readScreenshot(redis, task.name, run, url);
      if (!shot) {
        console.error(`no screenshot of ${url} in run ${run} (list them: crawl-studio screenshot ${taskFile})`);
        return EXIT.FAILED;
      }
      let file: string;
      if (values.out) writeFileSync((file = values.out), shot.jpeg);
      else file = await writeScreenshot(task.file, task.name, url, shot.jpeg);
      console.log(
        `${file}  (${shot.facts.finalUrl === url ? url : `${url} -> ${shot.facts.finalUrl}`}, ${new Date(shot.facts.at).toISOString()}: ${shot.facts.why})`,
      );
      return EXIT.OK;
    });
  },
});

export const resizeCommand = command({
  name: 'resize',
  args: '<task.crawl.yaml> <worker-id> <concurrency>',
  summary: 'ask a worker that sizes itself to run at a concurrency, which it then holds for 10 minutes',
  details:
    'The worker id is as `status` lists it (host:pid). Only a worker started with --concurrency auto or MIN..MAX takes it, within its range; its autoscaler does not undo it for 10 minutes, then goes on from there.',
  options: REDIS_OPTIONS,
  run(values, positionals) {
    if (positionals.length !== 3)
      throw new UsageError('resize takes a task file, a worker id and a concurrency', resizeCommand);
    const [file, id, n] = positionals as [string, string, string];
    return withQueue(file, redisTargetFrom(values), async (_q, task, redis) => {
      const refusal = await resizeWorker(redis, id, task.name, Number(n));
      if (refusal) {
        console.error(`crawl-studio resize: ${refusal}`);
        return EXIT.USAGE;
      }
      console.log(`asked worker ${id} to run at concurrency ${n}; \`crawl-studio status\` shows when it took it`);
      return EXIT.OK;
    });
  },
});
