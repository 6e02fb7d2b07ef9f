import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { freePort, startRedis, type RedisServer, serveHttp, type HttpServer } from '../support/services';
import { writeTask } from '../support/crawl';

// Logs a machine can read (issue 31, item 5): `--log-format json` on `run` (with the workers it starts) and `worker`
// writes one JSON object a line with time, level, task, run, worker, event, and url and reason where there is one.
// Every line of the output is parsed: one line that is not JSON fails the test.

const run = promisify(execFile);
const CLI = resolve('dist/cli.js');

interface Line {
  time: string;
  level: string;
  event: string;
  message: string;
  task?: string;
  run?: string;
  worker?: string;
  url?: string;
  reason?: string;
  [k: string]: unknown;
}

function parseAll(out: string): Line[] {
  return out
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => {
      let v: Line;
      try {
        v = JSON.parse(l) as Line;
      } catch {
        throw new Error(`not a JSON line: ${l}\n--- all:\n${out}`);
      }
      assert.ok(!Number.isNaN(Date.parse(v.time)), `time: ${l}`);
      assert.ok(['info', 'warn', 'error'].includes(v.level), `level: ${l}`);
      assert.equal(typeof v.event, 'string', `event: ${l}`);
      assert.equal(typeof v.message, 'string', `message: ${l}`);
      return v;
    });
}

describe('CLI: --log-format json (issue 31, item 5)', function () {
  this.timeout(120_000);
  let redis: RedisServer;
  let site: HttpServer;
  before(async () => {
    redis = await startRedis();
    site = await serveHttp((req, res) => {
      res.setHeader('content-type', 'text/html');
      if (req.url === '/') res.end('<a href="/a">a</a> <a href="/missing">m</a>');
      else if (req.url === '/a') res.end('<h1>a</h1>');
      else {
        res.statusCode = 404;
        res.end('no');
      }
    });
  });
  after(async () => {
    await site?.close();
    await redis?.stop();
  });

  it("run: every line of stdout is a JSON object; the workers' page failures come through with url and reason; the run ends with run-finished", async () => {
    const task = await writeTask(`name: jsonlogs
start: [${site.url}/]
request: { robots: false }
rules:
  - name: page
    follow: [{ selector: a, to: page }]
`);
    const { stdout, stderr } = await run(
      process.execPath,
      [CLI, 'run', task.file, '--workers', '1', '--redis', redis.url, '--log-format', 'json'],
      { timeout: 90_000 },
    );
    const lines = parseAll(stdout);
    assert.equal(stderr.trim(), '', 'nothing for people on stderr either');
    const events = new Set(lines.map((l) => l.event));
    for (const e of [
      'redis',
      'store-open',
      'worker-started',
      'page-failed',
      'failure-reason',
      'run-new',
      'run-finished',
    ])
      assert.ok(events.has(e), `no ${e} event in:\n${stdout}`);
    const failed = lines.find((l) => l.event === 'page-failed')!;
    assert.equal(failed.url, `${site.url}/missing`);
    assert.equal(failed.reason, 'http-404');
    assert.equal(failed.task, 'jsonlogs');
    assert.match(failed.worker ?? '', /^\S+:\d+$/);
    assert.ok(failed.run, 'the page names its run');
    const reason = lines.find((l) => l.event === 'failure-reason')!;
    assert.equal(reason.reason, 'http-404');
    assert.equal(reason.count, 1);
    assert.equal(reason.url, `${site.url}/missing`);
    const finished = lines.find((l) => l.event === 'run-finished')!;
    assert.equal(finished.task, 'jsonlogs');
    assert.equal(finished.run, failed.run);
    assert.equal(finished.done, 2);
    assert.equal(finished.failed, 1);
  });

  it('worker: JSON lines while it waits for Redis and when it stops', async () => {
    const task = await writeTask(`name: jsonworker\nstart: [${site.url}/]\nrules: [{ name: page }]\n`);
    const port = await freePort();
    const child = spawn(
      process.execPath,
      [CLI, 'worker', task.file, '--redis', `redis://127.0.0.1:${port}`, '--log-format', 'json'],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    child.stdout.on('data', (b) => (out += b));
    child.stderr.on('data', (b) => (out += b));
    await new Promise<void>((res, rej) => {
      const t = setTimeout(() => rej(new Error(`no retry line:\n${out}`)), 30_000);
      const iv = setInterval(
        () => /"attempt 2|\(attempt 2\)/.test(out) && (clearInterval(iv), clearTimeout(t), res()),
        50,
      );
    });
    child.kill('SIGTERM');
    assert.equal(await new Promise((r) => child.once('exit', r)), 0);
    const lines = parseAll(out);
    const waits = lines.filter((l) => l.event === 'redis-wait');
    assert.ok(waits.length >= 2, out);
    assert.match(
      waits[1]!.message,
      new RegExp(
        `cannot connect to redis://127\\.0\\.0\\.1:${port}: connection refused; trying again in 2 s \\(attempt 2\\)`,
      ),
    );
    assert.match(waits[0]!.worker ?? '', /:\d+$/);
    assert.equal(lines.at(-1)!.event, 'worker-stopped');
  });
  it('monitor: JSON lines on start, for every action taken or refused (never the token), and on stop; no token printed', async () => {
    // A task on the Redis to act on: a run of the site above.
    const task = await writeTask(`name: jsonmon\nstart: [${site.url}/]\nrules: [{ name: page }]\n`);
    await run(process.execPath, [CLI, 'run', task.file, '--workers', '1', '--redis', redis.url], { timeout: 60_000 });
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const start = (env: NodeJS.ProcessEnv) => {
      const child = spawn(
        process.execPath,
        [CLI, 'monitor', '--redis', redis.url, '--port', String(port), '--log-format', 'json'],
        { stdio: ['ignore', 'pipe', 'pipe'], env },
      );
      const o = { out: '', err: '' };
      child.stdout.on('data', (b) => (o.out += b));
      child.stderr.on('data', (b) => (o.err += b));
      return { child, o };
    };
    const up = async (o: { out: string }) => {
      for (let i = 0; i < 300 && !o.out.includes('monitor-started'); i++) await new Promise((r) => setTimeout(r, 100));
    };
    const post = (path: string, token?: string) =>
      fetch(`${url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(token ? { 'x-crawl-studio-token': token } : {}) },
        body: '{}',
      });
    // No token given: read-only, and no token anywhere in its output.
    const env = { ...process.env };
    delete env.CRAWL_STUDIO_MONITOR_TOKEN;
    const a = start(env);
    await up(a.o);
    assert.equal((await post('/api/tasks/jsonmon/pause')).status, 403);
    a.child.kill('SIGTERM');
    assert.equal(await new Promise((r) => a.child.once('exit', r)), 0);
    const la = parseAll(a.o.out);
    assert.deepEqual(
      la.map((l) => l.event),
      ['monitor-started', 'monitor-read-only', 'monitor-action-refused', 'monitor-stopping'],
      a.o.out,
    );
    assert.equal(la[0]!.url, `${url}/`);
    assert.equal(a.o.err, '', 'nothing on stderr: no token printed');
    // A given token: the action is logged with its task; the token is in no line.
    const TOKEN = 'json-log-token-abcdef0123456789';
    const b = start({ ...env, CRAWL_STUDIO_MONITOR_TOKEN: TOKEN });
    await up(b.o);
    assert.equal((await post('/api/tasks/jsonmon/pause', TOKEN)).status, 200);
    assert.equal((await post('/api/tasks/jsonmon/resume', 'wrong')).status, 403);
    assert.equal((await post('/api/tasks/jsonmon/resume', TOKEN)).status, 200);
    b.child.kill('SIGTERM');
    assert.equal(await new Promise((r) => b.child.once('exit', r)), 0);
    const lb = parseAll(b.o.out);
    assert.deepEqual(
      lb.map((l) => [l.event, l.task ?? null, l.action ?? null]),
      [
        ['monitor-started', null, null],
        ['monitor-action', 'jsonmon', 'pause'],
        ['monitor-action-refused', null, null],
        ['monitor-action', 'jsonmon', 'resume'],
        ['monitor-stopping', null, null],
      ],
      b.o.out,
    );
    assert.ok(!b.o.out.includes(TOKEN) && !b.o.err.includes(TOKEN), 'the token is never written');
  });
});
