import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { freePort, serveHttp, startRedis, type RedisServer } from '../support/services';
import { until } from '../support/until';
import { writeTask } from '../support/crawl';
import { TASKS_KEY, taskKeys } from '../../src/frontier/keys';

// `crawl-studio monitor` under an ACL user that may read and not run scripts (README, Which Redis): its pages serve,
// and an action answered 500 with Redis's bare "NOPERM …". It is a 403 now, in the words of the connection check,
// with the grants an action needs. With a run's failed and active pages to show, its task page answered 403 too
// (BullMQ's getJobs is a script, and TIME is not a read), `failures` exited 1 with the bare NOPERM, and `retry`
// said "no failed pages to retry" with exit 0: they read with plain commands now, and what changes the run is refused
// with exit 6 and the grants.

const CLI = resolve('dist/cli.js');

const READER = ['on', '>reader-pass', '~*', '&*', '+@read', '+ping', '+info', '+client', '+select'];

describe('crawl-studio monitor under a read-only ACL user', function () {
  this.timeout(120_000);
  let redis: RedisServer;
  let monitor: ChildProcess | undefined;
  before(async () => (redis = await startRedis()));
  after(async () => {
    if (monitor && monitor.exitCode === null) monitor.kill('SIGKILL');
    await redis?.stop();
  });

  it('serves its pages, and refuses an action with 403 naming the grants it needs', async () => {
    const admin = new Redis(redis.url);
    await admin.sadd(TASKS_KEY, 'acl');
    // A task with a run (pausing one that never ran is refused before any script, for that reason).
    await admin.hset(taskKeys('acl').meta, { run: 'r1', state: 'running', startedAt: Date.now() });
    await admin.call('ACL', 'SETUSER', 'reader', ...READER);
    admin.disconnect();
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    let log = '';
    monitor = spawn(process.execPath, [CLI, 'monitor', '--port', String(port)], {
      env: { ...process.env, CRAWL_STUDIO_REDIS: `redis://reader:reader-pass@127.0.0.1:${redis.port}` },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    monitor.stdout!.on('data', (d: Buffer) => (log += d.toString()));
    monitor.stderr!.on('data', (d: Buffer) => (log += d.toString()));
    const token = await until('the monitor and its token', () => /token \(shown once\): (\S+)/.exec(log)?.[1]);
    const tasks = await fetch(`${base}/api/tasks`);
    assert.equal(tasks.status, 200, await tasks.text());

    const res = await fetch(`${base}/api/tasks/acl/pause`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: '{}',
    });
    const body = (await res.json()) as { error: string };
    assert.equal(res.status, 403, body.error);
    assert.match(
      body.error,
      /^permission denied \(NOPERM .*'(eval|evalsha)' command\); the ACL user may not run a command or touch a key a crawl needs/,
    );
    assert.ok(!body.error.includes('reader-pass') && !log.includes('reader-pass'), log);
  });

  it("shows a run's failed and active pages to the reader, `failures` lists them, and `retry` is refused with exit 6", async () => {
    let release: () => void = () => undefined;
    const held = new Promise<void>((r) => (release = r));
    let slowAsked = false;
    const site = await serveHttp((req, res) => {
      res.setHeader('content-type', 'text/html');
      if (req.url === '/')
        return res.end('<a href="/ok">ok</a> <a href="/missing">missing</a> <a href="/slow">slow</a>');
      if (req.url === '/ok') return res.end('<h1>ok</h1>');
      if (req.url === '/slow') {
        slowAsked = true;
        void held.then(() => res.end('<h1>slow</h1>'));
        return;
      }
      res.statusCode = 404;
      res.end('<h1>not found</h1>');
    });
    const task = await writeTask(
      `name: aclrun\nstart: [${site.url}/]\nrequest:\n  retries: { attempts: 1 }\npoliteness:\n  perHost: { concurrency: 4, delay: 0 }\nrules:\n  - name: page\n    follow: [{ selector: a, to: page }]\n`,
    );
    const admin = new Redis(redis.url);
    await admin.call('ACL', 'SETUSER', 'reader', ...READER);
    const reader = `redis://reader:reader-pass@127.0.0.1:${redis.port}`;
    let runOut = '';
    const crawl = spawn(process.execPath, [CLI, 'run', task.file, '--workers', '1', '--redis', redis.url], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    crawl.stdout.on('data', (d: Buffer) => (runOut += d.toString()));
    crawl.stderr.on('data', (d: Buffer) => (runOut += d.toString()));
    const cli = async (...args: string[]): Promise<{ code: number; out: string }> => {
      try {
        const r = await promisify(execFile)(process.execPath, [CLI, ...args], {
          env: { ...process.env, CRAWL_STUDIO_REDIS: reader },
        });
        return { code: 0, out: r.stdout + r.stderr };
      } catch (e) {
        const err = e as { code: number; stdout: string; stderr: string };
        return { code: err.code, out: err.stdout + err.stderr };
      }
    };
    let last = '';
    try {
      await until(
        'the slow page held by the worker, the 404 failed',
        async () => {
          last = (await cli('failures', task.file)).out;
          return slowAsked && last.includes('/missing');
        },
        60_000,
        200,
      ).catch((err: Error) => assert.fail(`${err.message}\nfailures: ${last}\nrun: ${runOut}`));

      const port = await freePort();
      let log = '';
      monitor = spawn(process.execPath, [CLI, 'monitor', '--port', String(port)], {
        env: { ...process.env, CRAWL_STUDIO_REDIS: reader },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      monitor.stdout!.on('data', (d: Buffer) => (log += d.toString()));
      monitor.stderr!.on('data', (d: Buffer) => (log += d.toString()));
      await until('the monitor', () => /token \(shown once\)/.test(log));
      const res = await fetch(`http://127.0.0.1:${port}/api/tasks/aclrun`);
      const text = await res.text();
      assert.equal(res.status, 200, text);
      const view = JSON.parse(text) as {
        failures: { group: string; pages: { url: string }[] }[];
        active: { url: string }[];
      };
      assert.deepEqual(
        view.failures.map((f) => [f.group, f.pages.map((p) => p.url)]),
        [['http-404', [`${site.url}/missing`]]],
      );
      assert.deepEqual(
        view.active.map((a) => a.url),
        [`${site.url}/slow`],
      );

      const failures = await cli('failures', task.file);
      assert.equal(failures.code, 0, failures.out);
      assert.match(failures.out, /failed http-404: 1\n/, failures.out);

      const retry = await cli('retry', task.file);
      assert.equal(retry.code, 6, retry.out);
      assert.match(retry.out, /^crawl-studio: permission denied \(NOPERM .*\); .*ACL SETUSER/m, retry.out);
      assert.ok(!retry.out.includes('no failed pages'), retry.out);
      assert.match((await cli('failures', task.file)).out, /failed http-404: 1\n/, 'the refused retry changed nothing');
      const enqueue = await cli('enqueue', task.file, `${site.url}/more`);
      assert.equal(enqueue.code, 6, enqueue.out);
      assert.ok(!`${failures.out}${retry.out}${enqueue.out}${log}`.includes('reader-pass'));
    } finally {
      release();
      await until('the run finished', () => crawl.exitCode !== null, 60_000).catch(() => crawl.kill('SIGKILL'));
      admin.disconnect();
      await site.close();
    }
    assert.equal(crawl.exitCode, 0, runOut);
    assert.match(runOut, /pages failed +1 \(http-404: 1\)/, runOut);
  });
});
