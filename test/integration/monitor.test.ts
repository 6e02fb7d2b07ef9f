import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { chromium, type Browser, type Page } from 'playwright-core';
import type { CrawlStatus } from '../../src/frontier/types';
import type { TaskDetail } from '../../src/monitor/views';
import { keepScreenshot } from '../../src/frontier/screenshots';
import { connectRedis } from '../../src/redis/connect';
import { taskKeys, WORKERS_KEY } from '../../src/frontier/keys';
import { writeTask } from '../support/crawl';
import { browserOrSkip } from '../support/browser';
import { skipBecause } from '../support/skip';
import { freePort, serveHttp, startRedis, type HttpServer, type RedisServer } from '../support/services';
import { until } from '../support/until';
import { pagesTaskYaml } from '../support/pagesSite';

// `crawl-studio monitor` (issue 31, items 3 and 4), everything real: a redis-server, a local site, a crawl by the
// CLI, a fleet worker killed with SIGKILL, the monitor as the CLI starts it, Chromium on its page, `status --json`
// from the CLI to compare with, and a Prometheus scraping /metrics. Screenshots: test-artifacts/monitor/*.png.

const exec = promisify(execFile);
const CLI = resolve('dist/cli.js');
const SHOTS = resolve('test-artifacts/monitor');
const TOKEN = 'monitor-test-token-0123456789';
const PAGES = 8;
const BROWSER_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];

function site(): Promise<HttpServer> {
  return serveHttp((req, res) => {
    const slow = /^\/slow\/(\d+)$/.exec(req.url ?? '');
    if (slow) {
      // Pages that take a while, each linking to more: a crawl that is still fetching when the test looks.
      const i = Number(slow[1]);
      setTimeout(() => {
        res.setHeader('content-type', 'text/html');
        res.end(
          `<h1>slow ${i}</h1>${Array.from({ length: 4 }, (_, j) => `<a href="/slow/${i * 4 + j + 1}">next</a>`).join('')}`,
        );
      }, 1_500);
      return;
    }
    if (req.url === '/missing') {
      res.statusCode = 404;
      return res.end('gone');
    }
    res.setHeader('content-type', 'text/html');
    if (req.url === '/')
      res.end(
        `<h1>home</h1>${Array.from({ length: PAGES }, (_, i) => `<a href="/p${i}">p${i}</a>`).join('')}<a href="/missing">missing</a>`,
      );
    else res.end(`<h1>page ${req.url}</h1><a href="/">home</a>`);
  });
}

/** A GET with a Host header of our choosing (fetch does not let a caller set Host). */
function getWithHost(url: string, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers: { host } }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', reject);
    req.end();
  });
}

/** A task over the site's /slow/ pages: each answers 1.5 s late and links four more, so a run stays busy. */
const slowChainYaml = (name: string, siteUrl: string) => `name: ${name}
start: [${siteUrl}/slow/0]
request: { timeout: 10s, retries: { attempts: 1 } }
rules:
  - name: page
    match: ["**/slow/*"]
    follow:
      - selector: a
        to: page
`;

describe('crawl-studio monitor: the web page, the API and /metrics of a real crawl (issue 31)', function () {
  this.timeout(600_000);
  let redis: RedisServer;
  let web: HttpServer;
  let taskFile: string;
  let monitor: ChildProcess;
  let monitorUrl: string;
  let monitorStderr = '';
  /** The run summary's "items stored" line, to compare the monitor's with. */
  let storedLine = '';
  /** Its "items changed" figures (item history, issue 33): [added, changed, removed]. */
  let changedFigures: number[] = [];
  let browser: Browser | null = null;
  let page: Page;
  const children: ChildProcess[] = [];
  /** The worker the SIGKILL test killed: its beat counts as a worker until it ages out (WORKER_GONE_AFTER_MS). */
  let killedWorker = '';

  const cli = async (...args: string[]) => (await exec(process.execPath, [CLI, ...args], { timeout: 120_000 })).stdout;
  const statusJson = async () =>
    JSON.parse(await cli('status', taskFile, '--json', '--redis', redis.url)) as CrawlStatus;
  const api = async <T>(path: string) => {
    const r = await fetch(`${monitorUrl}${path}`);
    assert.equal(r.status, 200, `${path}: ${r.status}`);
    return (await r.json()) as T;
  };
  const post = (path: string, headers: Record<string, string> = {}, body: unknown = {}) =>
    fetch(`${monitorUrl}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    });
  const shot = (name: string) => page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });

  before(async function () {
    const chromiumPath = browserOrSkip(this);
    mkdirSync(SHOTS, { recursive: true });
    redis = await startRedis();
    web = await site();
    const task = await writeTask(pagesTaskYaml('mon', `${web.url}/`));
    taskFile = task.file;
    // A real crawl by the CLI, to its end: PAGES pages and the home fetched, /missing failed (HTTP 404).
    const out = await cli('run', taskFile, '--workers', '1', '--concurrency', '2', '--redis', redis.url);
    assert.match(out, new RegExp(`pages fetched +${PAGES + 1}\\b`), out);
    storedLine = /^ {2}items stored {4}(.*)$/m.exec(out)?.[1] ?? '';
    const changedLine = /^ {2}items changed {3}(\d+) added, (\d+) changed, (\d+) removed/m.exec(out);
    assert.ok(changedLine, out);
    changedFigures = changedLine.slice(1, 4).map(Number);

    const port = await freePort();
    monitorUrl = `http://127.0.0.1:${port}`;
    monitor = spawn(
      process.execPath,
      [CLI, 'monitor', '--redis', redis.url, '--port', String(port), '--bind', '127.0.0.1'],
      { env: { ...process.env, CRAWL_STUDIO_MONITOR_TOKEN: TOKEN }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    children.push(monitor);
    monitor.stderr!.on('data', (d: Buffer) => (monitorStderr += d.toString()));
    await until(
      'the monitor to answer /healthcheck',
      async () => (await fetch(`${monitorUrl}/healthcheck`)).status === 200,
    );
    browser = await chromium.launch({ executablePath: chromiumPath, args: BROWSER_ARGS });
    page = await browser.newPage({ viewport: { width: 1280, height: 1400 } });
  });

  after(async () => {
    await browser?.close();
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    await web?.close();
    await redis?.stop();
  });

  it('shows the counters `status --json` prints, from the same read-model', async () => {
    const status = await statusJson();
    assert.equal(status.stats!.done, PAGES + 1);
    assert.equal(status.stats!.failed, 1);
    const detail = await api<TaskDetail>('/api/tasks/mon');
    assert.deepEqual(detail.status.stats, status.stats);
    assert.deepEqual(detail.status.counts, status.counts);
    assert.deepEqual(detail.status.run, status.run);
    const list = await api<{ tasks: { status: CrawlStatus }[] }>('/api/tasks');
    assert.deepEqual(
      list.tasks.map((t) => t.status.stats),
      [status.stats],
    );

    await page.goto(`${monitorUrl}/#task=mon`);
    const figure = (name: string) => page.locator(`#task .card [data-figure="${name}"]`);
    await figure('done').waitFor();
    assert.equal(await figure('done').textContent(), String(status.stats!.done));
    assert.equal(await figure('failed').textContent(), String(status.stats!.failed));
    assert.equal(await figure('items').textContent(), String(status.stats!.items));
    assert.equal(await figure('enqueued').textContent(), String(status.stats!.enqueued));
    assert.equal(
      await page.locator('#tasks tr[data-task="mon"] [data-figure="done"]').textContent(),
      String(status.stats!.done),
    );
    assert.equal(await page.locator('#tasks tr[data-task="mon"] [data-figure="state"]').textContent(), 'finished');
    // Its charts, however short the crawl (its first sample and its driver's last are enough), the newest value "at
    // the end": a finished run has no "now".
    const captions = await page.locator('#task svg.chart + span').allTextContents();
    assert.equal(captions.length, 2, captions.join(' | '));
    assert.match(captions[0]!, /^max [\d.]+, at the end [\d.]+$/);
    assert.match(captions[1]!, /^max \d+, at the end \d+$/);
    await shot('1-finished-crawl');
  });

  it("shows the rows this run stored, as the run's summary counts them, and the newest items", async () => {
    // "page: 9 rows written by this run (…)": the summary's figure (store/runRows.ts) is the monitor's.
    const m = /^page: (\d+) rows written by this run/.exec(storedLine);
    assert.ok(m, storedLine);
    const detail = await api<TaskDetail>('/api/tasks/mon');
    assert.equal(detail.stored.note, null);
    assert.deepEqual(detail.stored.rows, [{ type: 'page', count: Number(m[1]) }]);
    assert.equal(detail.stored.run, detail.status.run!.run);
    assert.equal(detail.stored.recent.length, Math.min(10, Number(m[1])));
    assert.ok(
      detail.stored.recent.every(
        (i, k) => i.type === 'page' && (k === 0 || i.fetchedAt <= detail.stored.recent[k - 1]!.fetchedAt),
      ),
    );
    await page.locator('#task .card [data-figure="stored"]').filter({ hasText: m[1]! }).waitFor();
    assert.equal(await page.locator('#stored tbody tr').count(), detail.stored.recent.length);
    assert.ok(((await page.locator('#stored').textContent()) ?? '').includes(detail.stored.recent[0]!.key));
    // The items the run added, changed and removed: the summary's "items changed" (store/history/query.ts).
    const c = detail.stored.changes!;
    assert.deepEqual([c.added, c.changed, c.removed], changedFigures);
    assert.ok(changedFigures[0]! > 0, 'the first run added every item');
    assert.equal(
      await page.locator('#task .card [data-figure="items-added"]').textContent(),
      String(changedFigures[0]),
    );
    assert.equal(
      await page.locator('#task .card [data-figure="items-removed"]').textContent(),
      String(changedFigures[2]),
    );
    assert.equal(
      await page.locator(`#changes tr[data-run="${c.run}"] [data-figure="added"]`).textContent(),
      String(changedFigures[0]),
    );
  });

  it('shows the screenshots a run kept of its rendered pages, each served as its JPEG', async () => {
    // Kept as a worker keeps one (frontier/screenshots.ts keepScreenshot), from a real Chromium capture.
    const run = (await statusJson()).run!.run;
    const shotPage = await browser!.newPage({ viewport: { width: 320, height: 200 } });
    await shotPage.setContent('<h1 style="color:#c33">render failed</h1>');
    const jpeg = await shotPage.screenshot({ type: 'jpeg' });
    await shotPage.close();
    const r = connectRedis(redis.url);
    try {
      await keepScreenshot(
        r,
        'mon',
        run,
        { url: `${web.url}/hung`, finalUrl: `${web.url}/hung`, at: Date.now(), why: 'rendering timed out after 5 s' },
        jpeg,
      );
    } finally {
      r.disconnect();
    }
    const fig = page.locator(`#screenshots figure[data-url="${web.url}/hung"]`);
    await fig.waitFor({ timeout: 30_000 });
    assert.match((await fig.textContent()) ?? '', /rendering timed out/);
    await page.waitForFunction(
      (sel) => (document.querySelector<HTMLImageElement>(sel)?.naturalWidth ?? 0) > 0,
      `#screenshots figure[data-url="${web.url}/hung"] img`,
      { timeout: 30_000 },
    );
    // As the page resolved it (its path is relative to the page's).
    const src = await fig.locator('img').evaluate((img) => (img as HTMLImageElement).src);
    assert.ok(src.startsWith(`${monitorUrl}/api/tasks/mon/screenshot?`), src);
    const res = await fetch(src);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'image/jpeg');
    assert.deepEqual(Buffer.from(await res.arrayBuffer()), jpeg);
    assert.equal(
      (await fetch(`${monitorUrl}/api/tasks/mon/screenshot?run=${run}&url=${encodeURIComponent(`${web.url}/none`)}`))
        .status,
      404,
    );
    await shot('1b-screenshots-and-items');
  });

  it("shows a failure's reason, URL and message", async () => {
    const group = page.locator('#failures tbody[data-reason="http-404"]');
    await group.waitFor();
    const text = (await group.textContent()) ?? '';
    assert.match(text, /HTTP 404/);
    assert.ok(text.includes(`${web.url}/missing`), text);
    assert.equal(await group.locator('[data-figure="reason-count"]').textContent(), '1');
  });

  it("keeps a reason's Retry button while its count moves", async () => {
    // While pages keep failing, a reason's count changes every poll; rebuilt with it, the button under the pointer
    // was replaced between a click's press and its release, and the click reached neither. The run's stats count one
    // more 404 here, as a worker's finish would, and give it back after.
    const group = page.locator('#failures tbody[data-reason="http-404"]');
    const count = group.locator('[data-figure="reason-count"]');
    await until('the 404 counted once', async () => (await count.textContent()) === '1', 30_000, 100);
    const retry = await group.locator('button[data-action="retry"]').elementHandle();
    // The task's row in the list above moves with it (its Failed column): a click on it must still open the task.
    const listed = page.locator('#tasks tr[data-task="mon"]');
    const row = await listed.elementHandle();
    assert.equal(await listed.locator('[data-figure="failed"]').textContent(), '1');
    const run = (await statusJson()).run?.run;
    assert.ok(run, 'the task has a run');
    const stats = taskKeys('mon').stats(run);
    const conn = connectRedis(redis.url);
    try {
      await conn.hincrby(stats, 'failed:http-404', 1);
      await conn.hincrby(stats, 'failed', 1);
      await until('the 404 counted twice', async () => (await count.textContent()) === '2', 30_000, 100);
      assert.equal(await retry.evaluate((b) => b.isConnected), true, 'Retry is the same button after the count moved');
      assert.equal(await retry.evaluate((b) => b.textContent), 'Retry 2');
      await until(
        'the list counts it',
        async () => (await listed.locator('[data-figure="failed"]').textContent()) === '2',
        30_000,
        100,
      );
      assert.equal(await row.evaluate((r) => r.isConnected), true, "the task's row is the same after its count moved");
    } finally {
      await conn.hincrby(stats, 'failed:http-404', -1);
      await conn.hincrby(stats, 'failed', -1);
      conn.disconnect();
    }
    await until('the 404 counted once again', async () => (await count.textContent()) === '1', 30_000, 100);
  });

  it('marks a worker killed with SIGKILL gone', async () => {
    const worker = spawn(process.execPath, [CLI, 'worker', taskFile, '--redis', redis.url], { stdio: 'ignore' });
    children.push(worker);
    const id = await until(
      'the worker to beat',
      async () =>
        (await api<{ workers: { id: string; pid: number }[] }>('/api/workers')).workers.find(
          (w) => w.pid === worker.pid,
        )?.id,
    );
    killedWorker = id;
    const row = page.locator(`#workers tr[data-worker="${id}"]`);
    await row.waitFor();
    assert.equal(await row.locator('[data-figure="worker-state"]').textContent(), 'live');
    worker.kill('SIGKILL');
    // Its heartbeat stays in Redis; silent for three beats it is shown as gone (the dashboard's rule).
    await page.waitForFunction(
      (sel) => /^gone/.test(document.querySelector(sel)?.textContent ?? ''),
      `#workers tr[data-worker="${id}"] [data-figure="worker-state"]`,
      { timeout: 90_000, polling: 500 },
    );
    await shot('2-worker-gone');
  });

  it('refuses a request with a foreign Host header (DNS rebinding)', async () => {
    const port = new URL(monitorUrl).port;
    assert.equal(await getWithHost(`${monitorUrl}/api/tasks`, `attacker.example:${port}`), 403);
    assert.equal(await getWithHost(`${monitorUrl}/`, 'attacker.example'), 403);
    assert.equal(await getWithHost(`${monitorUrl}/metrics`, `rebind.127.0.0.1.nip.io:${port}`), 403);
    assert.equal(await getWithHost(`${monitorUrl}/api/tasks`, `localhost:${port}`), 200);
  });

  it('refuses a retry without the token (403) and nothing changes', async () => {
    const before = await statusJson();
    // From the page, with no token given: refused, said so.
    await page.locator('#failures button[data-action="retry"][data-reason="http-404"]').click();
    await page.locator('#message.error').filter({ hasText: '403' }).waitFor();
    // Straight at the API: no token, a wrong one, a wrong scheme.
    assert.equal((await post('/api/tasks/mon/retry', {}, { reason: 'http-404' })).status, 403);
    assert.equal(
      (await post('/api/tasks/mon/retry', { 'x-crawl-studio-token': `${TOKEN}x` }, { reason: 'http-404' })).status,
      403,
    );
    assert.equal(
      (await post('/api/tasks/mon/retry', { authorization: `Basic ${TOKEN}` }, { reason: 'http-404' })).status,
      403,
    );
    assert.equal((await post('/api/tasks/mon/pause')).status, 403);
    const after = await statusJson();
    assert.deepEqual(after.stats, before.stats);
    assert.deepEqual(after.counts, before.counts);
    assert.equal(after.isPaused, false);
    await shot('3-retry-refused');
  });

  it('a retry with the token puts the failed page back in the queue', async () => {
    const before = await statusJson();
    await page.locator('#token').fill(TOKEN);
    await page.locator('#token-form button').click();
    await page.locator('#failures button[data-action="retry"][data-reason="http-404"]').click();
    await page.locator('#message:not(.error)').filter({ hasText: 'back in the queue' }).waitFor();
    const after = await statusJson();
    assert.equal(after.stats!.failed, before.stats!.failed - 1);
    assert.equal(
      after.counts.waiting + after.counts.prioritized + after.counts.frontier,
      1,
      JSON.stringify(after.counts),
    );
    assert.equal(after.run!.state, 'running', 'a retried page reopens the run');
    // The page follows within a poll.
    await page.waitForFunction(
      (want) => document.querySelector('#task .card [data-figure="waiting"]')?.textContent === want,
      '1',
      { timeout: 30_000 },
    );
    await shot('4-retried');
    // Bearer works too, for scripts.
    const paused = await post('/api/tasks/mon/pause', { authorization: `Bearer ${TOKEN}` });
    assert.equal(paused.status, 200);
    assert.equal((await statusJson()).isPaused, true);
    assert.equal((await post('/api/tasks/mon/resume', { 'x-crawl-studio-token': TOKEN })).status, 200);
    assert.equal((await statusJson()).isPaused, false);
  });

  it('never writes the token anywhere but the one line of stderr a generated one gets', () => {
    // Given by the environment, it is not printed at all.
    assert.ok(!monitorStderr.includes(TOKEN), monitorStderr);
  });

  it('refuses to start bound beyond loopback without a given token, and says why', async () => {
    const r = await exec(process.execPath, [CLI, 'monitor', '--redis', redis.url, '--port', '0', '--bind', '0.0.0.0'], {
      timeout: 30_000,
    }).then(
      () => null,
      (err: { code: number; stderr: string }) => err,
    );
    assert.ok(r, 'the monitor started');
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /--bind 0\.0\.0\.0 is reachable from other machines: give the actions' token/);
  });

  it('against a port with nothing listening, exits non-zero with the target', async () => {
    const closed = await freePort();
    const r = await exec(process.execPath, [CLI, 'monitor', '--redis', `redis://127.0.0.1:${closed}`, '--port', '0'], {
      timeout: 30_000,
    }).then(
      () => null,
      (err: { code: number; stderr: string }) => err,
    );
    assert.ok(r, 'the monitor started');
    assert.notEqual(r.code, 0);
    assert.ok(r.stderr.includes(`127.0.0.1:${closed}`), r.stderr);
  });

  it('serves Prometheus: a real Prometheus scrapes /metrics and reads pages fetched equal to the crawl', async function () {
    const bin = ['/usr/bin/prometheus', '/usr/local/bin/prometheus'].find((p) => existsSync(p));
    if (!bin)
      skipBecause(this, 'prometheus is missing (apt-get install prometheus; scripts/setup.sh test installs it)');
    const dir = mkdtempSync(join(tmpdir(), 'cs-prom-'));
    const promPort = await freePort();
    const target = new URL(monitorUrl).host;
    writeFileSync(
      join(dir, 'prometheus.yml'),
      `global: { scrape_interval: 1s, evaluation_interval: 1s }\nscrape_configs:\n  - job_name: crawl-studio\n    static_configs: [{ targets: ['${target}'] }]\n`,
    );
    const prom = spawn(
      bin,
      [
        `--config.file=${join(dir, 'prometheus.yml')}`,
        `--storage.tsdb.path=${join(dir, 'data')}`,
        `--web.listen-address=127.0.0.1:${promPort}`,
      ],
      { stdio: 'ignore' },
    );
    children.push(prom);
    try {
      const status = await statusJson();
      const query = async (q: string) => {
        const r = (await (
          await fetch(`http://127.0.0.1:${promPort}/api/v1/query?query=${encodeURIComponent(q)}`)
        ).json()) as { data: { result: { metric: Record<string, string>; value: [number, string] }[] } };
        return r.data.result;
      };
      const fetched = await until(
        'Prometheus to have scraped the monitor',
        async () => (await query('crawl_studio_pages_fetched_total{task="mon"}'))[0],
        90_000,
      );
      assert.equal(Number(fetched.value[1]), status.stats!.done);
      assert.equal(fetched.metric.job, 'crawl-studio');
      const up = await query('up{job="crawl-studio"}');
      assert.equal(up[0]?.value[1], '1');
      const items = await query('crawl_studio_items_extracted_total{task="mon"}');
      assert.equal(Number(items[0]?.value[1]), status.stats!.items);
      // Items stored: the run summary's figure ("page: N rows written by this run").
      const stored = await query('crawl_studio_items_stored_total{task="mon"}');
      assert.equal(stored[0]?.value[1], /^page: (\d+) rows/.exec(storedLine)?.[1], storedLine);
      // Items added, changed and removed: the summary's "items changed".
      for (const [i, kind] of (['added', 'changed', 'removed'] as const).entries()) {
        const v = await query(`crawl_studio_items_${kind}_total{task="mon"}`);
        assert.equal(Number(v[0]?.value[1]), changedFigures[i], kind);
      }
      // The exposition has no URL in it: labels are task and reason only.
      const text = await (await fetch(`${monitorUrl}/metrics`)).text();
      assert.ok(!text.includes(web.url), 'no URL in a label');
      assert.match(text, /^crawl_studio_pages_waiting\{task="mon"\} 1$/m);
      // The killed worker still counts until its heartbeat is a minute old (WORKER_GONE_AFTER_MS, every view's rule).
      assert.match(text, /^crawl_studio_workers [01]$/m);
      assert.match(
        text,
        /^crawl_studio_pages_failed_total\{task="mon",reason="http-404"\} 0$/m,
        'the retried page left the failures',
      );
    } finally {
      prom.kill('SIGTERM');
      await new Promise((r) => prom.once('exit', r));
      rmSync(dir, { recursive: true, force: true });
    }
  });
  it('shows the pages being fetched now with their worker, and stops a running run from the page: the CLI driving it ends', async () => {
    const slow = await writeTask(slowChainYaml('slow', web.url));
    const run = spawn(
      process.execPath,
      [CLI, 'run', slow.file, '--workers', '1', '--concurrency', '2', '--redis', redis.url],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    children.push(run);
    let out = '';
    run.stdout.on('data', (d: Buffer) => (out += d.toString()));
    run.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((r) => run.once('exit', (code) => r(code)));
    // A page in flight, tied to the worker process that holds it (its lock's token, named by the heartbeat).
    const active = await until(
      'a page being fetched, with its worker',
      async () => (await api<TaskDetail>('/api/tasks/slow')).active.find((p) => p.worker !== null),
      60_000,
    );
    assert.match(active.url, /\/slow\/\d+$/);
    assert.equal(active.rule, 'page');
    const fleet = await api<{ workers: { id: string; tasks: string[] }[] }>('/api/workers');
    assert.ok(
      fleet.workers.some((w) => w.id === active.worker && w.tasks.includes('slow')),
      JSON.stringify(fleet),
    );
    await page.goto(`${monitorUrl}/#task=slow`);
    await page.locator('#task td.url').filter({ hasText: '/slow/' }).first().waitFor({ timeout: 30_000 });
    // The task's workers say how many of its pages each is fetching now.
    await page.waitForFunction(
      (sel) => Number(document.querySelector(sel)?.textContent ?? 0) > 0,
      `#task tr[data-worker="${active.worker}"] [data-figure="worker-fetching"]`,
      { timeout: 30_000, polling: 250 },
    );
    await shot('5-being-fetched');
    // Without the token: refused, and the run goes on.
    assert.equal((await post('/api/tasks/slow/stop')).status, 403);
    assert.equal(
      (await post('/api/tasks/slow/stop', { 'x-crawl-studio-token': TOKEN }, { run: 'not-the-run' })).status,
      409,
    );
    const before = JSON.parse(await cli('status', slow.file, '--json', '--redis', redis.url)) as CrawlStatus;
    assert.equal(before.run!.state, 'running');
    // A worker takes the task's pages: URLs added now are fetched, and no "No worker is running" is said.
    const added = await post(
      '/api/tasks/slow/enqueue',
      { 'x-crawl-studio-token': TOKEN },
      { urls: [`${web.url}/slow/99999`] },
    );
    const addedBody = (await added.json()) as { message: string };
    assert.equal(added.status, 200, addedBody.message);
    assert.equal(addedBody.message, "1 of 1 URL(s) enqueued in 'slow'.");
    // With it, from the page (it asks first): CrawlQueue.stopRun, the editor's Stop Crawl.
    await page.locator('#token').fill(TOKEN);
    await page.locator('#token-form button').click();
    page.once('dialog', (d) => void d.accept());
    await page.locator('#task button[data-action="stop"]').click();
    await page.locator('#message:not(.error)').filter({ hasText: 'stopped' }).waitFor();
    const after = JSON.parse(await cli('status', slow.file, '--json', '--redis', redis.url)) as CrawlStatus;
    assert.equal(after.run!.state, 'stopped');
    assert.equal(after.run!.run, before.run!.run);
    assert.equal(after.isPaused, true, 'no worker takes its pages');
    // The `crawl-studio run` that drove it sees it stopped and ends, as its own Ctrl-C-and-end would.
    const code = await until(
      'the CLI run to end',
      async () => (run.exitCode !== null || run.signalCode !== null ? { code: await exited } : null),
      60_000,
    );
    assert.equal(code.code, 0, out);
    assert.match(out, /^Run \S+ was stopped from elsewhere \(the monitor's Stop run/m, out);
    assert.match(out, /^Crawl 'slow' stopped in /m, out);
    assert.doesNotMatch(out, /another process finalized/, out);
    await page.locator('#tasks tr[data-task="slow"] [data-figure="state"]').filter({ hasText: 'stopped' }).waitFor();
    await page.locator('#task button[data-action="stop"]').waitFor({ state: 'detached' });
    // Over: its queue stays paused, and neither Resume (refused: a start begins a new run) nor Pause is offered.
    assert.equal(
      await page.locator('#task button[data-action="resume"], #task button[data-action="pause"]').count(),
      0,
    );
    // Nor Add URLs: the engine refuses to reopen a stopped run (frontier/refused.ts), and says so in a 409.
    assert.equal(await page.locator('#task button[data-action="enqueue"]').count(), 0);
    const refused = await post(
      '/api/tasks/slow/enqueue',
      { 'x-crawl-studio-token': TOKEN },
      { urls: [`${web.url}/slow/99998`] },
    );
    assert.equal(refused.status, 409);
    assert.match(((await refused.json()) as { error: string }).error, /was stopped, and Stop ends a run for good/);
    await shot('6-run-stopped');
  });

  it('calls a run no process drives "interrupted", as `status` does, and says what resumes it', async () => {
    const task = await writeTask(slowChainYaml('halted', web.url));
    const run = spawn(process.execPath, [CLI, 'run', task.file, '--workers', '1', '--redis', redis.url], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(run);
    const exited = new Promise<number | null>((r) => run.once('exit', (code) => r(code)));
    await until(
      'a page of it fetched',
      async () => ((await api<TaskDetail>('/api/tasks/halted')).status.stats?.done ?? 0) > 0,
    );
    // Ctrl-C: the run is kept to resume; its meta still says "running", nobody drives it.
    run.kill('SIGINT');
    assert.equal(await exited, 130);
    const statusText = await cli('status', task.file, '--redis', redis.url);
    const said = /^Interrupted: .*$/m.exec(statusText)?.[0];
    assert.ok(said, statusText);
    const detail = await api<TaskDetail>('/api/tasks/halted');
    assert.equal(detail.status.run!.state, 'running');
    assert.deepEqual(detail.phase, { word: 'interrupted', text: said });
    await page.goto(`${monitorUrl}/#task=halted`);
    await page
      .locator('#tasks tr[data-task="halted"] [data-figure="state"]')
      .filter({ hasText: 'interrupted' })
      .waitFor();
    // The task's own view (the one shown before, a stopped run's, says its phase too), then its sentence.
    await page
      .locator('#task h2')
      .filter({ hasText: `Task halted — run ${detail.status.run!.run}, interrupted` })
      .waitFor({ timeout: 30_000 });
    // The same words; the command `status` marks with backticks is set as code, not shown with its backticks.
    const phaseEl = page.locator('#task [data-figure="phase"]');
    assert.equal(await phaseEl.textContent(), said.replaceAll('`', ''));
    assert.deepEqual(await phaseEl.locator('code').allTextContents(), ['crawl-studio run']);
    await shot('7-run-interrupted');
  });

  it('keeps what is typed into Add URLs, and its buttons, across polls; Add URLs enqueues the URLs and clears the box', async () => {
    // The token is in this tab's sessionStorage since the retry's test. Nothing runs: each poll reads the same.
    await page.goto(`${monitorUrl}/#task=mon`);
    const box = page.locator('#task textarea');
    // This task's view, not the one shown before (which has a Pause button too).
    await page
      .locator('#task h2')
      .filter({ hasText: /^Task mon — / })
      .waitFor({ timeout: 30_000 });
    await page.locator('#task button[data-action="pause"]').waitFor({ timeout: 30_000 });
    const typed = [`${web.url}/typed/1`, `${web.url}/typed/2`].join('\n');
    await box.fill(typed);
    const pause = await page.locator('#task button[data-action="pause"]').elementHandle();
    for (let poll = 0; poll < 2; poll++) {
      const seen = await page.evaluate(() => document.body.dataset.updated);
      await page.waitForFunction((was) => document.body.dataset.updated !== was, seen, { timeout: 30_000 });
    }
    // Rebuilt every poll, the box was emptied every 2 s and a click across a rebuild reached no button.
    assert.equal(await box.inputValue(), typed, 'the URLs typed are still there two polls later');
    assert.equal(await pause.evaluate((b) => b.isConnected), true, 'Pause is the same button two polls later');
    // The beat of the worker killed earlier, as it is once aged out (a minute after its last): no worker is left.
    const conn = connectRedis(redis.url);
    await conn.hdel(WORKERS_KEY, killedWorker).finally(() => conn.disconnect());
    const before = await statusJson();
    await page.locator('#task button[data-action="enqueue"]').click();
    await page.locator('#message:not(.error)').filter({ hasText: "2 of 2 URL(s) enqueued in 'mon'" }).waitFor();
    assert.match(await page.locator('#message').innerText(), /No worker is running: start the crawl to fetch them/);
    assert.equal(await box.inputValue(), '', 'the box is cleared once the URLs are in');
    const after = await statusJson();
    const queued = (c: CrawlStatus['counts']) => c.waiting + c.prioritized + c.frontier;
    assert.equal(queued(after.counts), queued(before.counts) + 2, JSON.stringify(after.counts));
  });

  it('works behind a reverse proxy that serves it under a path of its own: reads, the feed link and an action', async () => {
    // As nginx's `location /ops/crawl/ { proxy_pass http://monitor:PORT/; }`: the prefix stripped, the Host the
    // monitor's own. Every path the page asked for was absolute (/monitor.js, /api/tasks): behind it, nothing loaded.
    const target = new URL(monitorUrl);
    const seen: string[] = [];
    const proxy = await serveHttp((req, res) => {
      seen.push(req.url ?? '');
      if (!req.url?.startsWith('/ops/crawl/')) return res.writeHead(404).end('not here');
      const upstream = request(
        {
          host: target.hostname,
          port: target.port,
          method: req.method,
          path: req.url.slice('/ops/crawl'.length),
          headers: { ...req.headers, host: target.host },
        },
        (up) => {
          res.writeHead(up.statusCode ?? 502, up.headers);
          up.pipe(res);
        },
      );
      upstream.on('error', () => res.writeHead(502).end());
      req.pipe(upstream);
    });
    const context = await browser!.newContext();
    try {
      const behind = await context.newPage();
      await behind.goto(`${proxy.url}/ops/crawl/#token=${TOKEN}&task=mon`);
      const before = await statusJson();
      const done = behind.locator('#task .card [data-figure="done"]');
      await done.waitFor({ timeout: 30_000 });
      assert.equal(await done.textContent(), String(before.stats!.done));
      assert.equal(
        await behind
          .locator('a', { hasText: 'Atom feed of the changes' })
          .evaluate((a) => (a as HTMLAnchorElement).href),
        `${proxy.url}/ops/crawl/api/tasks/mon/changes.atom`,
      );
      await behind.locator('#task button[data-action="pause"]').click();
      await behind.locator('#message:not(.error)').filter({ hasText: "'mon' paused" }).waitFor();
      assert.equal((await statusJson()).isPaused, true);
      await behind.locator('#task button[data-action="resume"]').click();
      await behind.locator('#message:not(.error)').filter({ hasText: "'mon' resumed" }).waitFor();
      assert.equal((await statusJson()).isPaused, false);
      assert.deepEqual(
        // The browser's own /favicon.ico is asked for at the root of every site.
        seen.filter((u) => !u.startsWith('/ops/crawl/') && u !== '/favicon.ico'),
        [],
        'every request the page made stayed under its path',
      );
    } finally {
      await context.close();
      await proxy.close();
    }
  });
});
