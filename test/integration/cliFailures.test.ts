import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { startRedis, type RedisServer, serveHttp, type HttpServer } from '../support/services';
import { writeTask } from '../support/crawl';
import type { RunFailures } from '../../src/observe/failures';

// Every failure's reason in the terminal (issue 31, item 1): the real CLI, a real site with a 404, a 500 and a
// login that fails, a real redis-server. `failures` lists each page with its reason; the run summary and `status`
// name each reason with its first message; `retry --reason http-404` puts back the 404 only, through the dashboard's
// Retry all (observe/failures.ts retryFailureGroup), and the next `run` fetches it again (the site's access log).

const run = promisify(execFile);
const CLI = resolve('dist/cli.js');
const SITE_PASSWORD = 'not-the-password-31';

interface Site extends HttpServer {
  readonly hits: Map<string, number>;
}

async function site(): Promise<Site> {
  const hits = new Map<string, number>();
  const server = await serveHttp((req, res) => {
    const path = new URL(req.url!, 'http://x').pathname;
    hits.set(path, (hits.get(path) ?? 0) + 1);
    res.setHeader('content-type', 'text/html');
    if (path === '/') res.end('<a href="/ok">ok</a> <a href="/missing">missing</a> <a href="/broken">broken</a>');
    else if (path === '/ok') res.end('<h1>ok</h1>');
    else if (path === '/broken') {
      res.statusCode = 500;
      res.end('<h1>oops</h1>');
    } else if (path === '/login') {
      res.statusCode = 403;
      res.end('<h1>go away</h1>');
    } else if (path === '/robots.txt') {
      res.setHeader('content-type', 'text/plain');
      res.end('User-agent: *\nDisallow: /private\n');
    } else if (path === '/r') res.end('<a href="/private/1">p</a> <a href="/ok">ok</a>');
    else if (path.startsWith('/private')) res.end('<h1>private</h1>');
    else {
      res.statusCode = 404;
      res.end('<h1>not found</h1>');
    }
  });
  return Object.assign(server, { hits });
}

describe('CLI: every failure with its reason, and retry by reason (issue 31, item 1)', function () {
  this.timeout(180_000);
  let redis: RedisServer;
  let web: Site;
  before(async () => {
    redis = await startRedis();
    web = await site();
  });
  after(async () => {
    await web?.close();
    await redis?.stop();
  });

  async function cli(...args: string[]): Promise<{ code: number; out: string }> {
    try {
      const { stdout, stderr } = await run(process.execPath, [CLI, ...args, '--redis', redis.url], {
        timeout: 120_000,
        env: { ...process.env, CRAWL_STUDIO_SITE_PASSWORD: SITE_PASSWORD },
      });
      return { code: 0, out: stdout + stderr };
    } catch (e) {
      const err = e as { code: number; stdout: string; stderr: string };
      return { code: err.code, out: err.stdout + err.stderr };
    }
  }

  it('a 404 and a 500: the summary, `status`, `failures` and `errors` say why; `retry --reason http-404` refetches the 404 only', async () => {
    const task = await writeTask(`name: fails-http
start: [${web.url}/]
request: { robots: false, retries: { attempts: 2, delay: 10ms } }
rules:
  - name: page
    follow: [{ selector: a, to: page }]
`);
    // Before any run, each says so, in the same words.
    for (const command of ['status', 'failures', 'retry']) {
      const before = await cli(command, task.file);
      assert.deepEqual([before.code, before.out], [0, 'fails-http: never run on this Redis\n'], command);
    }
    const first = await cli('run', task.file, '--workers', '1', '--concurrency', '2');
    assert.equal(first.code, 0, first.out);
    assert.match(first.out, /pages failed +2 \(/, first.out);
    assert.match(first.out, /^ +http-404: 1 — HTTP 404 .*\/missing/m, first.out);
    assert.match(first.out, /^ +http-500: 1 — HTTP 500 .*\/broken/m, first.out);
    assert.match(first.out, /why, page by page: crawl-studio failures /, first.out);

    const listed = await cli('failures', task.file);
    assert.equal(listed.code, 0, listed.out);
    assert.match(listed.out, /run \S+: 2 pages failed, 0 skipped/, listed.out);
    assert.match(listed.out, /^failed http-404: 1$/m, listed.out);
    assert.match(
      listed.out,
      new RegExp(
        `^  ${web.url}/missing\\n    rule page · HTTP 404 · 1 attempt · worker \\S+:\\d+ · \\d{4}-\\d\\d-\\d\\dT`,
        'm',
      ),
      listed.out,
    );
    assert.match(
      listed.out,
      new RegExp(`^  ${web.url}/broken\\n    rule page · HTTP 500 · 2 attempts · worker `, 'm'),
      listed.out,
    );

    const json = JSON.parse((await cli('failures', task.file, '--json', '--reason', 'http')).out) as RunFailures;
    assert.deepEqual(json.groups.map((g) => [g.kind, g.reason, g.count, g.pages.map((p) => p.url)]).sort(), [
      ['failed', 'http-404', 1, [`${web.url}/missing`]],
      ['failed', 'http-500', 1, [`${web.url}/broken`]],
    ]);
    // A class takes its statuses only; a prefix that is not one of the HTTP forms takes nothing.
    const server = JSON.parse((await cli('failures', task.file, '--json', '--reason', 'http-5xx')).out) as RunFailures;
    assert.deepEqual(
      server.groups.map((g) => g.reason),
      ['http-500'],
    );
    const none = JSON.parse((await cli('failures', task.file, '--json', '--reason', 'htt')).out) as RunFailures;
    assert.deepEqual(none.groups, []);
    // A run id that is not one: said, exit 2, not "run bogus: 0 pages failed".
    const run = /run (\S+): 2 pages failed/.exec(listed.out)![1]!;
    const bogus = await cli('failures', task.file, '--run', 'bogus');
    assert.equal(bogus.code, 2, bogus.out);
    assert.equal(
      bogus.out.trim(),
      `crawl-studio: no run 'bogus' of fails-http on this Redis (its current run is ${run})`,
    );
    assert.match((await cli('failures', task.file, '--run', run)).out, /^failed http-404: 1$/m);

    const status = await cli('status', task.file);
    assert.match(status.out, /^pages failed 2 \(why, page by page: crawl-studio failures /m, status.out);
    assert.match(status.out, /^ +http-404: 1 — HTTP 404/m, status.out);

    const errors = await cli('errors', task.file);
    assert.match(errors.out, /^0 errors recorded/m, errors.out);
    assert.match(errors.out, /2 pages failed in the current run; see crawl-studio failures /, errors.out);

    const before = { missing: web.hits.get('/missing'), broken: web.hits.get('/broken'), ok: web.hits.get('/ok') };
    const retried = await cli('retry', task.file, '--reason', 'http-404');
    assert.equal(retried.code, 0, retried.out);
    assert.match(retried.out, /put back 1 failed page \(http-404: 1\)/, retried.out);
    // Nothing runs the task: said, with how to start it, rather than pages waiting silently.
    assert.match(
      retried.out,
      /^No worker is running: start the crawl to fetch them \(`crawl-studio run \S+` resumes the run\)\.$/m,
      retried.out,
    );
    const again = await cli('run', task.file, '--workers', '1', '--concurrency', '2');
    assert.equal(again.code, 0, again.out);
    assert.match(again.out, /Resumed run/, again.out);
    assert.equal(web.hits.get('/missing'), before.missing! + 1, 'the 404 was fetched again');
    assert.equal(web.hits.get('/broken'), before.broken, 'the 500 was not');
    assert.equal(web.hits.get('/ok'), before.ok, 'nor a page that was fetched');
    // Failed again: counted once, not twice (the retry took it out of the counters).
    assert.match(again.out, /pages failed +2 \(http-404: 1, http-500: 1\)/, again.out);
  });

  it('a failed login: said once per session with its status while the run goes on, and listed as `login` by `failures`', async () => {
    const task = await writeTask(`name: fails-login
start: [${web.url}/ok]
request: { robots: false, retries: { attempts: 2, delay: 10ms } }
session: { pool: 1 }
login:
  url: ${web.url}/login
  form: { fields: { user: me, password: '\${CRAWL_STUDIO_SITE_PASSWORD}' } }
rules: [{ name: page }]
`);
    const r = await cli('run', task.file, '--workers', '1', '--concurrency', '1');
    assert.equal(r.code, 0, r.out);
    const said = r.out
      .split('\n')
      .filter((l) => /^worker \d+: login to .*\/login failed: .*403.* \(session \d\)/.test(l));
    assert.equal(said.length, 1, `one line for the one session:\n${r.out}`);
    assert.match(r.out, /^ +login: 1 — login to .*\/login failed: .*403/m, r.out);
    const listed = await cli('failures', task.file, '--reason', 'login');
    assert.match(listed.out, /^failed login: 1$/m, listed.out);
    assert.match(listed.out, new RegExp(`^  ${web.url}/ok\\n    rule page · 1 attempt · worker `, 'm'), listed.out);
    assert.ok(!r.out.includes(SITE_PASSWORD) && !listed.out.includes(SITE_PASSWORD), 'no credential printed');
  });

  it('a page skipped by robots.txt: `failures` lists it under `skipped robots` with its rule and worker', async () => {
    const task = await writeTask(`name: skips-robots
start: [${web.url}/r]
rules:
  - name: page
    follow: [{ selector: a, to: page }]
`);
    const r = await cli('run', task.file, '--workers', '1', '--concurrency', '1');
    assert.equal(r.code, 0, r.out);
    assert.match(r.out, /pages skipped +1 \(robots: 1\)/, r.out);
    const listed = await cli('failures', task.file);
    assert.match(listed.out, /run \S+: 0 pages failed, 1 skipped/, listed.out);
    assert.match(
      listed.out,
      new RegExp(`^skipped robots: 1\n  ${web.url}/private/1\n    rule page · worker \\S+:\\d+ · \\d{4}-`, 'm'),
      listed.out,
    );
    assert.equal(web.hits.get('/private/1'), undefined, 'never fetched');
  });
});
