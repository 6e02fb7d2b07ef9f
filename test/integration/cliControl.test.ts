import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { pauseTask } from '../../src/frontier/control';
import { TASKS_KEY, taskKeys } from '../../src/frontier/keys';
import { readRun } from '../../src/frontier/partitions';
import { schedulerJobId } from '../../src/frontier/types';
import type { RunFailures } from '../../src/observe/failures';
import { readTaskStatus } from '../../src/observe/taskStatus';
import { writeTask } from '../support/crawl';
import { cliSuite, oneAtATimeTask, slowLinksSite, spawnCli } from '../support/cliSuite';
import { until } from '../support/until';
import { MONITOR_TOKEN, startTestMonitor } from '../support/monitor';

// `crawl-studio pause`, `resume` and `stop`: a fleet operator's controls with no editor and no monitor open, the same
// functions (frontier/control.ts) as the Queue Explorer's and the monitor's buttons. Real redis-server, a local site
// (pages 300 ms each, one at a time, so the run is still going when it is controlled), the CLI as users run it.

const CLI = resolve('dist/cli.js');
const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const PAGES = 30;

describe('crawl-studio pause, resume and stop', function () {
  this.timeout(180_000);
  const suite = cliSuite(() => slowLinksSite(PAGES));
  const cli = (...args: string[]) =>
    promisify(execFile)(process.execPath, [CLI, ...args, '--redis', suite.redis.url], { timeout: 60_000 });
  const refused = (args: string[], words: RegExp) =>
    assert.rejects(cli(...args), (err: { code: number; stderr: string; stdout: string }) => {
      assert.equal(err.code, 1, err.stderr);
      assert.match(err.stderr, words);
      assert.equal(err.stdout, '');
      return true;
    });
  const taskYaml = (name: string) => oneAtATimeTask(name, suite.web.url);
  const done = async (task: string) => {
    const run = await readRun(suite.conn, task);
    return run ? Number(await suite.conn.hget(taskKeys(task).stats(run.run), 'done')) : 0;
  };

  /** `crawl-studio run` of a task file, one worker taking one page at a time. */
  const startRun = (file: string) => spawnCli(suite, 'run', file, '--workers', '1', '--concurrency', '1');

  it('refuses a task that never ran on this Redis (a wrong --redis), naming it, with exit 1', async () => {
    const task = await writeTask(taskYaml('never'));
    await refused(['pause', task.file], /^crawl-studio pause: 'never' has never run on this Redis: nothing to pause$/m);
    await refused(
      ['resume', task.file],
      /^crawl-studio resume: 'never' has never run on this Redis: nothing to resume$/m,
    );
    await refused(['stop', task.file], /^crawl-studio stop: 'never' has never run on this Redis: nothing to stop$/m);
    // Reading it writes nothing either: `status` and `failures` answer, `retry` finds nothing to retry.
    assert.match((await cli('status', task.file)).stdout, /^never: never run on this Redis$/m);
    await cli('failures', task.file);
    await cli('retry', task.file);
    // Not made a task of this Redis by asking, and no key of it left there: BullMQ's queue handles wrote their meta
    // hash (`cs:{never}:never:meta`) into a Redis the task never ran on, a wrong --redis that may be someone's.
    assert.equal(await suite.conn.sismember(TASKS_KEY, 'never'), 0, 'not listed among the tasks');
    assert.deepEqual(await suite.conn.keys('*never*'), []);
  });

  it('pauses a running crawl everywhere, resumes it, then stops it: the `run` driving it ends as stopped', async () => {
    const task = await writeTask(taskYaml('ctl'));
    const { exited, out } = startRun(task.file);
    await until('two pages fetched', async () => (await done('ctl')) >= 2);

    const paused = await cli('pause', task.file);
    assert.equal(
      paused.stdout.trim(),
      "'ctl' paused: no worker takes its pages until it is resumed (pages in flight finish)",
    );
    assert.equal((await readTaskStatus(suite.conn, 'ctl')).phase.kind, 'paused');
    // Paused means nothing more is fetched: the page in flight finishes, then the count stands still.
    // No page in flight (BullMQ's active list is empty), however long a loaded machine takes to finish it.
    await until(
      'the page in flight to finish',
      async () => (await readTaskStatus(suite.conn, 'ctl')).counts.active === 0,
    );
    const settled = await done('ctl');
    await new Promise((r) => setTimeout(r, 1_500));
    assert.equal(await done('ctl'), settled, 'no page fetched while paused');
    assert.match((await cli('status', task.file)).stdout, /^ctl: run \S+, paused, started /m);
    // The `run` driving it says so on its progress line, where "0.0 pages/s" and a frozen time said nothing of why.
    await until('the driver to say it is paused', () => /^ctl · paused · \d+ done · /m.test(out.text));

    assert.equal((await cli('resume', task.file)).stdout.trim(), "'ctl' resumed");
    await until('pages fetched again', async () => (await done('ctl')) > settled);

    const run = (await readRun(suite.conn, 'ctl'))!.run;
    // A script that names the run it started stops only that run.
    await refused(
      ['stop', task.file, '--run', 'not-the-run'],
      new RegExp(
        `^crawl-studio stop: run not-the-run of 'ctl' is not its current run \\(${run}\\): nothing stopped$`,
        'm',
      ),
    );
    const stopped = await cli('stop', task.file, '--run', run);
    assert.equal(
      stopped.stdout.trim(),
      `run ${run} of 'ctl' stopped: no worker takes its pages (pages in flight finish); the next start begins a new run`,
    );
    // The `run` that drove it sees it stopped and ends, as after the monitor's Stop run (exit 0: it was stopped).
    assert.equal(await exited, 0, out.text);
    assert.match(out.text, /^Run \S+ was stopped from elsewhere/m, out.text);
    // What it added is listed, as a finished run's is; a run cut short marks nothing removed.
    assert.match(
      out.text,
      /^ {2}items changed {3}\d+ added, 0 changed, 0 removed; not complete \(it was stopped before its pages were done\), so nothing was marked removed /m,
      out.text,
    );
    assert.equal((await readRun(suite.conn, 'ctl'))!.state, 'stopped');
    assert.ok((await done('ctl')) < PAGES + 1, 'it ended before its pages did');
    // Over: resume and stop refuse, saying why.
    await refused(['resume', task.file], /^crawl-studio resume: task 'ctl' was stopped \(Stop Crawl ended its run\)/m);
    await refused(['stop', task.file], new RegExp(`^crawl-studio stop: run ${run} of 'ctl' is already stopped$`, 'm'));
  });

  it('keeps a stopped run over: URLs added and failed pages retried are refused, with the same words everywhere', async () => {
    // The first start URL is unreachable: one failed page to retry (one attempt, no robots.txt to ask first).
    const task = await writeTask(
      oneAtATimeTask('over', suite.web.url).replace(
        `start: [${suite.web.url}/]`,
        `start: [http://127.0.0.1:9/gone, ${suite.web.url}/]`,
      ),
    );
    const { exited, out } = startRun(task.file);
    const stats = async () => (await readTaskStatus(suite.conn, 'over')).stats;
    await until('the unreachable page failed and two fetched', async () => {
      const s = await stats();
      return (s?.failed ?? 0) >= 1 && (s?.done ?? 0) >= 2;
    });
    // Paused, a URL added waits for the resume, and says so: "the task's workers fetch them" was not so.
    await cli('pause', task.file);
    const added = await cli('enqueue', task.file, `${suite.web.url}/later`);
    assert.equal(
      added.stdout,
      `enqueued  ${suite.web.url}/later\n'over' is paused: its pages are fetched once it is resumed (Resume in the Queue Explorer or the monitor, \`crawl-studio resume\`).\n`,
    );
    await cli('stop', task.file);
    assert.equal(await exited, 0, out.text);
    const run = (await readRun(suite.conn, 'over'))!.run;
    const before = await readTaskStatus(suite.conn, 'over');
    assert.equal(before.stats!.failed, 1);
    // A URL added to it, or its failed page retried, reopened it with every page it had left waiting: the way
    // around Resume, which a stopped run refuses.
    const words = (what: string) =>
      `run ${run} of 'over' was stopped, and Stop ends a run for good: ${what}. Start the task again (Start Crawl, \`crawl-studio run\`) to begin a new run from its start URLs.`;
    const line = (what: string) => new RegExp(`^crawl-studio: ${escapeRegExp(words(what))}$`, 'm');
    await refused(['enqueue', task.file, `${suite.web.url}/later2`], line('no URL is added to it'));
    await refused(['retry', task.file], line('its failed pages are not retried'));
    // The monitor's buttons call the same functions: a 409 with the same words.
    const monitor = await startTestMonitor(suite.conn);
    try {
      const post = (action: string, body: unknown) =>
        fetch(`${monitor.url}/api/tasks/over/${action}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-crawl-studio-token': MONITOR_TOKEN },
          body: JSON.stringify(body),
        });
      const enqueued = await post('enqueue', { urls: [`${suite.web.url}/later3`] });
      assert.deepEqual([enqueued.status, await enqueued.json()], [409, { error: words('no URL is added to it') }]);
      const failures = JSON.parse((await cli('failures', task.file, '--json')).stdout) as RunFailures;
      const reason = failures.groups.find((g) => g.kind === 'failed')!.reason;
      const retried = await post('retry', { reason });
      const retriedBody = (await retried.json()) as { error?: string; message?: string };
      assert.deepEqual([retried.status, retriedBody], [409, { error: words('its failed pages are not retried') }]);
    } finally {
      await monitor.close();
    }
    // Nothing reopened it: still stopped and paused, its failure and its waiting pages as they were.
    const after = await readTaskStatus(suite.conn, 'over');
    assert.deepEqual(
      [after.run!.state, after.isPaused, after.stats!.failed, after.counts],
      ['stopped', true, 1, before.counts],
    );
    // Its progress line says "stopped", not the "paused" its queue also is.
    assert.match((await cli('status', task.file)).stdout, /^over · stopped · \d+ done · 1 failed · /m);
  });

  it("stops a scheduled task's run: its `run` ends, the schedule is held and said so, and the next `run` starts anew", async () => {
    const task = await writeTask(`${taskYaml('sch')}schedule: { every: 1h }\n`);
    const first = startRun(task.file);
    await until('two pages fetched', async () => (await done('sch')) >= 2);
    const stoppedRun = (await readRun(suite.conn, 'sch'))!.run;
    await cli('stop', task.file);
    // It stayed up for the schedule, holding the task's lease: a `run` started next was refused as a run in progress.
    assert.equal(await first.exited, 0, first.out.text);
    assert.match(first.out.text, /^Run \S+ was stopped from elsewhere \(the monitor's Stop run, `crawl-studio stop`/m);
    const held =
      'Stopped. Its schedule is held until the task is started again (Start Crawl, `crawl-studio run`), which begins a new run.';
    const status = await readTaskStatus(suite.conn, 'sch');
    assert.equal(status.phase.kind === 'stopped' && status.phase.next?.held, true, JSON.stringify(status.phase));
    assert.equal((await cli('status', task.file)).stdout.split('\n')[1], held);
    const second = startRun(task.file);
    const again = await until('a new run', async () => {
      const r = await readRun(suite.conn, 'sch');
      return r && r.run !== stoppedRun && r.state === 'running' ? r.run : null;
    });
    assert.match((await cli('status', task.file)).stdout, new RegExp(`^sch: run ${again}, running, `, 'm'));
    second.child.kill('SIGINT');
    assert.equal(await second.exited, 130, second.out.text);
  });

  it("holds a paused schedule's due run until `resume`, never counting it as a waiting page", async () => {
    const task = await writeTask(`name: due
start: [${suite.web.url}/p1]
request: { robots: false }
schedule: { every: 10s }
rules:
  - name: page
    match: ["**"]
    items:
      - type: page
        key: [title]
        fields: { title: h1 }
`);
    const driver = startRun(task.file);
    // Paused as soon as the first run is seen finished, in this process (the pause `crawl-studio pause` makes, tested
    // above): a CLI process started on a loaded machine could come after the next run's time, 10 s after the first's.
    const first = await until(
      'the first run finished',
      async () => {
        const r = await readRun(suite.conn, 'due');
        return r?.state === 'finished' ? r.run : null;
      },
      60_000,
      20,
    );
    await pauseTask(suite.conn, 'due');
    // Paused, the scheduler's job comes due and leaves the delayed set for `wait`, where no worker takes it.
    const keys = taskKeys('due');
    const dueJob = await until('the next run to come due', async () => {
      const next = await suite.conn.zscore(keys.bull.repeat, 'schedule');
      const id = schedulerJobId(next ?? '');
      const due = next !== null && (await suite.conn.zscore(keys.bull.delayed, id)) === null;
      return due && (await suite.conn.exists(`${keys.bull.job}${id}`)) === 1 ? id : null;
    });
    assert.ok((await suite.conn.lrange(keys.bull.wait, 0, -1)).includes(dueJob), 'the due run waits in `wait`');
    const status = await readTaskStatus(suite.conn, 'due');
    assert.equal(status.run!.run, first, 'no run started while paused');
    assert.deepEqual(
      { waiting: status.counts.waiting, delayed: status.counts.delayed, prioritized: status.counts.prioritized },
      { waiting: 0, delayed: 0, prioritized: 0 },
      'the scheduler is not a page',
    );
    assert.match(
      (await cli('status', task.file)).stdout.split('\n')[1]!,
      /^Finished\. Its schedule's next run, due at \S+Z, waits until the queue is resumed\.$/,
    );
    // Prometheus sees the same: the run it was due to start, and the pause holding it.
    const monitor = await startTestMonitor(suite.conn);
    try {
      const metrics = await (await fetch(`${monitor.url}/metrics`)).text();
      assert.match(metrics, /^crawl_studio_task_paused\{task="due"\} 1$/m);
      const next = Number(/^crawl_studio_schedule_next_run_time_seconds\{task="due"\} (\S+)$/m.exec(metrics)?.[1]);
      assert.equal(next * 1000, status.nextRunAt, metrics);
      assert.ok(next * 1000 <= Date.now(), 'due, and held');
    } finally {
      await monitor.close();
    }
    await cli('resume', task.file);
    await until('the next run once resumed', async () => (await readRun(suite.conn, 'due'))?.run !== first);
    driver.child.kill('SIGINT');
    await driver.exited;
  });
});
