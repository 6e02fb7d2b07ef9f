import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { session, writeTask } from '../support/crawl';
import { readRun } from '../../src/frontier/partitions';
import { startTestMonitor } from '../support/monitor';
import { serveHttp } from '../support/services';
import { cliSuite } from '../support/cliSuite';
import { pagesTaskYaml, servePagesSite } from '../support/pagesSite';
import { until } from '../support/until';

// What a worker says in its own log about its work (worker/activityLog.ts): `crawl-studio worker` logged failures
// and nothing else, so an operator without the editor could not tell a worker waiting for a run from one working or
// one idle after it. Real redis-server, a local site with a 404, a run started by a session without local workers
// and the CLI worker joining it, its JSON log read back; and a `run`, whose own workers stay quiet about it.

const CLI = resolve('dist/cli.js');
const PAGES = 6;

interface Line {
  readonly event?: string;
  readonly message: string;
  readonly run?: string;
  readonly pages?: number;
  readonly failed?: number;
  readonly items?: number;
}

describe("a worker's log says what it does: runs it waits for and takes, pages each interval (Scrapy's LogStats)", function () {
  this.timeout(180_000);
  const suite = cliSuite(() => servePagesSite(PAGES));

  const taskYaml = (name: string) => pagesTaskYaml(name, `${suite.web.url}/`);

  it('says it waits for a run, takes it, counts its pages (failures by reason, items) and says it ended', async () => {
    const task = await writeTask(taskYaml('wa'));
    const worker = spawn(
      process.execPath,
      [CLI, 'worker', task.file, '--redis', suite.redis.url, '--log-stats', '1s', '--log-format', 'json'],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    suite.children.push(worker);
    let out = '';
    worker.stdout.on('data', (d: Buffer) => (out += d.toString()));
    worker.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const lines = () =>
      out
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as Line);
    const waiting = await until('the worker to say it waits', () => lines().find((l) => l.event === 'worker-run'));
    assert.equal(
      waiting.message,
      `wa: no run in progress on this Redis; waiting for a run (\`crawl-studio run ${task.file}\` or Start Crawl starts one)`,
    );

    const s = session(task, suite.redis.url, { workers: 0 });
    const result = await s.run();
    await s.close();
    const run = result.run.run;
    const stats = result.status.stats!;
    assert.equal(stats.done, PAGES + 1);
    assert.equal(stats.failed, 1);
    await until('the worker to say the run ended', () =>
      lines().some((l) => l.event === 'worker-run' && l.message.startsWith(`wa: run ${run} ended; waiting`)),
    );
    await until('the last pages in an activity line', () => {
      const sum = lines()
        .filter((l) => l.event === 'worker-activity')
        .reduce((n, l) => n + l.pages!, 0);
      return sum === stats.done + stats.failed;
    });
    const runLines = lines().filter((l) => l.event === 'worker-run');
    assert.deepEqual(
      runLines.map((l) => l.message.replace(/;.*/, '')),
      ['wa: no run in progress on this Redis', `wa: run ${run} is running: taking its pages`, `wa: run ${run} ended`],
    );
    const activity = lines().filter((l) => l.event === 'worker-activity');
    assert.equal(
      activity.reduce((n, l) => n + l.failed!, 0),
      1,
    );
    assert.equal(
      activity.reduce((n, l) => n + l.items!, 0),
      stats.items,
    );
    assert.ok(
      activity.some((l) => /\d+ failed \(http-404: 1\)/.test(l.message)),
      activity.map((l) => l.message).join('\n'),
    );
    assert.match(
      activity.at(-1)!.message,
      new RegExp(`; ${stats.done + stats.failed} pages since this worker started$`),
    );
  });

  it('writes only the lines at or above --log-level: warn keeps a failed page and drops the activity, error drops both', async () => {
    const task = await writeTask(taskYaml('wa-level'));
    interface Leveled extends Line {
      readonly level: string;
    }
    // One worker at a time takes the whole run (the session starts none), so the run's failed page is its.
    const crawlWith = async (args: string[], env: NodeJS.ProcessEnv) => {
      const worker = spawn(
        process.execPath,
        [CLI, 'worker', task.file, '--redis', suite.redis.url, '--log-stats', '1s', '--log-format', 'json', ...args],
        { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } },
      );
      suite.children.push(worker);
      let out = '';
      worker.stdout.on('data', (d: Buffer) => (out += d.toString()));
      const s = session(task, suite.redis.url, { workers: 0 });
      const result = await s.run();
      await s.close();
      assert.equal(result.status.stats!.failed, 1);
      // Past an activity interval after the run's end, so a line that should not be written would have been.
      await new Promise((r) => setTimeout(r, 2_500));
      const exited = new Promise((r) => worker.once('exit', r));
      worker.kill('SIGTERM');
      await exited;
      return out
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as Leveled);
    };

    const warn = await crawlWith(['--log-level', 'warn'], {});
    assert.deepEqual(
      warn.filter((l) => l.level === 'info'),
      [],
    );
    assert.equal(warn.filter((l) => l.event === 'page-failed').length, 1, JSON.stringify(warn));

    // $CRAWL_STUDIO_LOG_LEVEL, for a container whose command line is fixed.
    const error = await crawlWith([], { CRAWL_STUDIO_LOG_LEVEL: 'error' });
    assert.deepEqual(
      error.filter((l) => l.level !== 'error'),
      [],
    );

    // And the default writes both, on the same run's shape.
    const info = await crawlWith([], {});
    assert.ok(info.some((l) => l.event === 'worker-activity' && l.level === 'info'));
    assert.equal(info.filter((l) => l.event === 'page-failed' && l.level === 'warn').length, 1);
  });

  it("is off in the workers a `run` starts: the run's own progress says it", async () => {
    const task = await writeTask(taskYaml('wa-run'));
    const { stdout } = await promisify(execFile)(
      process.execPath,
      [CLI, 'run', task.file, '--redis', suite.redis.url, '--workers', '1', '--log-format', 'json'],
      { timeout: 120_000 },
    );
    const events = stdout
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => (JSON.parse(l) as Line).event);
    assert.ok(events.includes('worker-started'), "the run's worker lines pass through its JSON log");
    assert.ok(!events.includes('worker-run') && !events.includes('worker-activity'), events.join(' '));
  });

  it('warns, even with --log-stats 0, when its copy of the task is not the one the run runs with', async () => {
    // Pages held until the end, so the run is running whenever a worker reads it.
    let release: () => void = () => undefined;
    const held = new Promise<void>((r) => (release = r));
    const slow = await serveHttp((req, res) => {
      res.setHeader('content-type', 'text/html');
      if (req.url === '/') return res.end('<h1>home</h1><a href="/p1">1</a><a href="/p2">2</a>');
      void held.then(() => res.end(`<h1>page ${req.url}</h1>`));
    });
    const yaml = pagesTaskYaml('wa-copy', `${slow.url}/`);
    const task = await writeTask(yaml);
    const sameElsewhere = await writeTask(yaml);
    const edited = await writeTask(yaml.replace('title: h1', 'title: h2'));
    const s = session(task, suite.redis.url, { workers: 0 });
    const running = s.run();
    try {
      await until('the run started', async () => (await readRun(suite.conn, 'wa-copy'))?.state === 'running');
      const start = (file: string, stats: string) => {
        const child = spawn(
          process.execPath,
          [CLI, 'worker', file, '--redis', suite.redis.url, '--log-stats', stats, '--log-format', 'json'],
          { stdio: ['ignore', 'pipe', 'pipe'] },
        );
        suite.children.push(child);
        let out = '';
        child.stdout.on('data', (d: Buffer) => (out += d.toString()));
        child.stderr.on('data', (d: Buffer) => (out += d.toString()));
        return () =>
          out
            .split('\n')
            .filter((l) => l.startsWith('{'))
            .map((l) => JSON.parse(l) as Line);
      };
      const run = (await readRun(suite.conn, 'wa-copy'))!.run;
      const other = start(edited.file, '0');
      const same = start(sameElsewhere.file, '60s');
      const warning = await until('the edited copy to be said', () => other().find((l) => l.event === 'task-differs'));
      assert.equal(
        warning.message,
        `wa-copy: this worker's task file (${edited.file}) differs from the one run ${run} runs with (its rules, selectors or settings are not the same): the pages it takes are fetched and extracted by its copy. Give every worker the same file, then restart this one.`,
      );
      assert.deepEqual(
        other()
          .map((l) => l.event)
          .filter((e) => e === 'worker-run' || e === 'worker-activity'),
        [],
        '--log-stats 0',
      );
      // The same task at another path is the same task: read in the same step as the line saying the run.
      await until('the other copy to have read the run', () =>
        same().some((l) => l.event === 'worker-run' && l.message.includes(`run ${run} is running`)),
      );
      assert.equal(same().filter((l) => l.event === 'task-differs').length, 0);

      // Wherever the fleet is watched: its heartbeat carries it to `status` and the monitor's workers.
      const status = await until('`status` to list the warning', async () => {
        const { stdout } = await promisify(execFile)(process.execPath, [
          CLI,
          'status',
          task.file,
          '--redis',
          suite.redis.url,
        ]);
        return stdout.includes('    warning: ') && stdout;
      });
      assert.equal(
        status
          .split('\n')
          .filter((l) => l.startsWith('    warning: '))
          .join('\n'),
        `    warning: ${warning.message}`,
        status,
      );
      const monitor = await startTestMonitor(suite.conn);
      try {
        const { workers } = (await (await fetch(`${monitor.url}/api/workers`)).json()) as {
          workers: { tasks: string[]; warnings: string[] }[];
        };
        // This test's two workers: the other tests' may still beat.
        assert.deepEqual(
          workers
            .filter((w) => w.tasks.includes('wa-copy'))
            .map((w) => w.warnings)
            .sort((a, b) => a.length - b.length),
          [[], [warning.message]],
        );
      } finally {
        await monitor.close();
      }
    } finally {
      release();
      await running;
      await s.close();
      await slow.close();
    }
  });
});
