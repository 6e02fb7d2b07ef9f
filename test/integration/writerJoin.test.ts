import assert from 'node:assert/strict';
import { formatDuration } from '../../src/core/units';
import { stopTask } from '../../src/frontier/control';
import { partitionKeys } from '../../src/frontier/keys';
import { readRun } from '../../src/frontier/partitions';
import { readLiveWriters } from '../../src/frontier/storeWriters';
import { runElapsedMs } from '../../src/observe/figures';
import { describeRunPhase } from '../../src/observe/runPhase';
import { readTaskStatus } from '../../src/observe/taskStatus';
import { writeTask } from '../support/crawl';
import { cliSuite, oneAtATimeTask, slowLinksSite, spawnCli } from '../support/cliSuite';
import { until } from '../support/until';

// A run interrupted (its `run` stopped with Ctrl-C) and finished by the fleet: `crawl-studio worker` takes its pages
// and `crawl-studio writer` stores them and finalizes it. The run stayed marked idle from the interruption to its
// end, so its duration (and pages/s) left out all the time the fleet crawled it: `status` said 4.2 s and 26 pages/s
// for a 50 s crawl at 2.7, and the writer's summary, computed apart, said 50.3 s. And the writer, which stays up for
// the task's next run, wrote the finished run's progress line every 2 s. Real redis-server, a local site, the CLI.

const PAGES = 16;

describe('a run interrupted and finished by fleet workers and `crawl-studio writer`', function () {
  this.timeout(240_000);
  // Pages that take a moment, one at a time: the run is still going when it is interrupted.
  const suite = cliSuite(() => slowLinksSite(PAGES));
  const start = (...args: string[]) => spawnCli(suite, ...args);

  it("counts the fleet's time in the run's duration, says it once in the writer's words, and writes the end once", async () => {
    const task = await writeTask(oneAtATimeTask('wj', suite.web.url));
    const run = start('run', task.file, '--workers', '1', '--concurrency', '1');
    const ran = run.exited;
    await until(
      'two pages fetched',
      async () =>
        Number(await suite.conn.hget(`cs:{wj}:#stats:${(await readRun(suite.conn, 'wj'))?.run}`, 'done')) >= 2,
    );
    run.child.kill('SIGINT');
    assert.equal(await ran, 130, run.out.text);
    const interrupted = (await readRun(suite.conn, 'wj'))!;
    assert.ok(interrupted.idleSince, 'an interrupted run is idle from its interruption');
    // Idle for a while: this time is not the crawl's.
    await new Promise((r) => setTimeout(r, 1_500));

    // The writer first, then a worker: the run is seen with both while the worker crawls the rest (300 ms a page).
    const writer = start('writer', task.file);
    await until('the writer to beat', async () => (await readLiveWriters(suite.conn, 'wj')).length === 1);
    start('worker', task.file, '--log-stats', '0');
    // While the fleet crawls it, every view says the writer will finish it (it looked like a run nobody drives).
    const phase = await until('the writer to be seen', async () => {
      const s = await readTaskStatus(suite.conn, 'wj');
      return s.phase.kind === 'running' && s.phase.writer ? describeRunPhase(s.phase) : null;
    });
    assert.match(
      phase,
      /^Running on 1 worker, finished and stored by `crawl-studio writer` \(pid \d+, \S+\) once they drain it\.$/,
    );
    assert.ok(phase.includes(`(pid ${writer.child.pid},`), phase);
    const summary = await until('the writer to finish the run', () =>
      /^Crawl 'wj' finished in (.+)$/m.exec(writer.out.text),
    );
    const finished = (await readRun(suite.conn, 'wj'))!;
    assert.equal(finished.state, 'finished');
    assert.equal(finished.idleSince, null, 'joined by a writer, the run was no longer idle');
    assert.ok((finished.pausedMs ?? 0) >= 1_500, `the idle time is left out: ${finished.pausedMs} ms`);
    // The fleet's crawl is in the duration, which was only the part before the interruption; the writer's summary
    // says the same figure as every view.
    const elapsed = runElapsedMs(finished, Date.now());
    assert.ok(elapsed > interrupted.idleSince - interrupted.startedAt, `${elapsed} ms`);
    assert.equal(summary[1], formatDuration(elapsed));

    // The writer stays up for the task's next run: the finished run's progress is not written again and again.
    await new Promise((r) => setTimeout(r, 5_000));
    const after = writer.out.text.slice(writer.out.text.indexOf(summary[0]));
    assert.ok(after.split('\n').filter((l) => l.startsWith('wj · ')).length <= 1, after);
  });

  it('waits for the first run, serves it, and once it is stopped elsewhere stores what it left, says so once, and its Ctrl-C resumes nothing', async () => {
    const task = await writeTask(oneAtATimeTask('ws', suite.web.url));
    // Started with the fleet, before the task's first run: it waits, as a worker does (it exited 1, so an
    // orchestrator restarted it in a loop).
    const writer = start('writer', task.file);
    await until('the writer to wait for a run', () =>
      writer.out.text.includes(
        `ws: never run on this Redis; waiting for a run (\`crawl-studio run ${task.file}\` or Start Crawl starts one)`,
      ),
    );
    const driver = start('run', task.file, '--workers', '1', '--concurrency', '1');
    await until('two pages fetched', async () => ((await readTaskStatus(suite.conn, 'ws')).stats?.done ?? 0) >= 2);
    const run = (await readRun(suite.conn, 'ws'))!.run;
    await stopTask(suite.conn, 'ws');
    assert.equal(await driver.exited, 0, driver.out.text);
    const said = `Run ${run} was stopped from elsewhere (the monitor's Stop run, \`crawl-studio stop\` or an editor's Stop Crawl): it does not resume; the next \`run\` begins a new one. The writer stored what it left and waits for the task's next run.`;
    await until('the writer to say the run stopped', () => writer.out.text.includes(said));
    // What the run left in Redis is stored, by the driver's writer or this one.
    await until(
      'no item left in the stream',
      async () => (await suite.conn.xlen(partitionKeys('ws', 'ws').items)) === 0,
      15_000,
    );
    // Said once, however long it then waits for the next run.
    await new Promise((r) => setTimeout(r, 2_000));
    assert.equal(writer.out.text.split(said).length - 1, 1, writer.out.text);
    writer.child.kill('SIGINT');
    assert.equal(await writer.exited, 130, writer.out.text);
    // It resumed nothing: "Resumed run … (it had not finished)" and "run the same command again to resume" were said.
    assert.match(
      writer.out.text,
      new RegExp(`^Writer stopped\\. Run ${run} had been stopped: the next \`run\` begins a new one\\.$`, 'm'),
    );
    assert.doesNotMatch(writer.out.text, /Resumed run|to resume run/);
  });
});
