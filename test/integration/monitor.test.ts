import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { chromium, type Browser, type Page } from 'playwright-core';
import type { CrawlStatus } from '../../src/frontier/crawl';
import type { TaskDetail } from '../../src/monitor/views';
import { writeTask } from '../support/crawl';
import { browserOrSkip } from '../support/browser';
import { skipBecause } from '../support/skip';
import { freePort, serveHttp, startRedis, type HttpServer, type RedisServer } from '../support/services';
import { until } from '../support/until';

// `crawl-studio monitor` (issue 31, items 3 and 4), everything real: a redis-server, a local site, a crawl by the
// CLI, a fleet worker killed with SIGKILL, the monitor as the CLI starts it, Chromium on its page, `status --json`
// from the CLI to compare with, and a Prometheus scraping /metrics. Screenshots: test-artifacts/monitor/*.png.

const exec = promisify(execFile);
const CLI = resolve('dist/cli.js');
const SHOTS = resolve('test-artifacts/monitor');
const TOKEN = 'monitor-test-token-0123456789';
const PAGES = 8;
const BROWSER_ARGS = ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'];

function site(): Promise<HttpServer> {
  return serveHttp((req, res) => {
    if (req.url === '/missing') {
      res.statusCode = 404;
      return res.end('gone');
    }
    res.setHeader('content-type', 'text/html');
    if (req.url === '/') res.end(`<h1>home</h1>${Array.from({ length: PAGES }, (_, i) => `<a href="/p${i}">p${i}</a>`).join('')}<a href="/missing">missing</a>`);
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


describe('crawl-studio monitor: the web page, the API and /metrics of a real crawl (issue 31)', function () {
  this.timeout(600_000);
  let redis: RedisServer;
  let web: HttpServer;
  let taskFile: string;
  let monitor: ChildProcess;
  let monitorUrl: string;
  let monitorStderr = '';
  let browser: Browser | null = null;
  let page: Page;
  const children: ChildProcess[] = [];

  const cli = async (...args: string[]) => (await exec(process.execPath, [CLI, ...args], { timeout: 120_000 })).stdout;
  const statusJson = async () => JSON.parse(await cli('status', taskFile, '--json', '--redis', redis.url)) as CrawlStatus;
  const api = async <T>(path: string) => {
    const r = await fetch(`${monitorUrl}${path}`);
    assert.equal(r.status, 200, `${path}: ${r.status}`);
    return (await r.json()) as T;
  };
  const post = (path: string, headers: Record<string, string> = {}, body: unknown = {}) => fetch(`${monitorUrl}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  const shot = (name: string) => page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });

  before(async function () {
    const chromiumPath = browserOrSkip(this);
    mkdirSync(SHOTS, { recursive: true });
    redis = await startRedis();
    web = await site();
    const task = await writeTask(`name: mon
start: [${web.url}/]
request: { timeout: 5s, retries: { attempts: 1 } }
rules:
  - name: page
    match: ["**"]
    follow:
      - selector: a
        to: page
    items:
      - type: page
        key: [title]
        fields:
          title: h1
`);
    taskFile = task.file;
    // A real crawl by the CLI, to its end: PAGES pages and the home fetched, /missing failed (HTTP 404).
    const out = await cli('run', taskFile, '--workers', '1', '--concurrency', '2', '--redis', redis.url);
    assert.match(out, new RegExp(`pages fetched +${PAGES + 1}\\b`), out);

    const port = await freePort();
    monitorUrl = `http://127.0.0.1:${port}`;
    monitor = spawn(process.execPath, [CLI, 'monitor', '--redis', redis.url, '--port', String(port), '--bind', '127.0.0.1'], { env: { ...process.env, CRAWL_STUDIO_MONITOR_TOKEN: TOKEN }, stdio: ['ignore', 'pipe', 'pipe'] });
    children.push(monitor);
    monitor.stderr!.on('data', (d: Buffer) => (monitorStderr += d.toString()));
    await until('the monitor to answer /healthcheck', async () => (await fetch(`${monitorUrl}/healthcheck`)).status === 200);
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
    assert.deepEqual(list.tasks.map((t) => t.status.stats), [status.stats]);

    await page.goto(`${monitorUrl}/#task=mon`);
    const figure = (name: string) => page.locator(`#task .card [data-figure="${name}"]`);
    await figure('done').waitFor();
    assert.equal(await figure('done').textContent(), String(status.stats!.done));
    assert.equal(await figure('failed').textContent(), String(status.stats!.failed));
    assert.equal(await figure('items').textContent(), String(status.stats!.items));
    assert.equal(await figure('enqueued').textContent(), String(status.stats!.enqueued));
    assert.equal(await page.locator('#tasks tr[data-task="mon"] [data-figure="done"]').textContent(), String(status.stats!.done));
    assert.equal(await page.locator('#tasks tr[data-task="mon"] [data-figure="state"]').textContent(), 'finished');
    await shot('1-finished-crawl');
  });

  it("shows a failure's reason, URL and message", async () => {
    const group = page.locator('#failures tbody[data-reason="http-404"]');
    await group.waitFor();
    const text = (await group.textContent()) ?? '';
    assert.match(text, /HTTP 404/);
    assert.ok(text.includes(`${web.url}/missing`), text);
    assert.equal(await group.locator('[data-figure="reason-count"]').textContent(), '1');
  });

  it('marks a worker killed with SIGKILL gone', async () => {
    const worker = spawn(process.execPath, [CLI, 'worker', taskFile, '--redis', redis.url], { stdio: 'ignore' });
    children.push(worker);
    const id = await until('the worker to beat', async () => (await api<{ workers: { id: string; pid: number }[] }>('/api/workers')).workers.find((w) => w.pid === worker.pid)?.id);
    const row = page.locator(`#workers tr[data-worker="${id}"]`);
    await row.waitFor();
    assert.equal(await row.locator('[data-figure="worker-state"]').textContent(), 'live');
    worker.kill('SIGKILL');
    // Its heartbeat stays in Redis; silent for three beats it is shown as gone (the dashboard's rule).
    await page.waitForFunction((sel) => /^gone/.test(document.querySelector(sel)?.textContent ?? ''), `#workers tr[data-worker="${id}"] [data-figure="worker-state"]`, { timeout: 90_000, polling: 500 });
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
    assert.equal((await post('/api/tasks/mon/retry', { 'x-crawl-studio-token': `${TOKEN}x` }, { reason: 'http-404' })).status, 403);
    assert.equal((await post('/api/tasks/mon/retry', { authorization: `Basic ${TOKEN}` }, { reason: 'http-404' })).status, 403);
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
    assert.equal(after.counts.waiting + after.counts.prioritized + after.counts.frontier, 1, JSON.stringify(after.counts));
    assert.equal(after.run!.state, 'running', 'a retried page reopens the run');
    // The page follows within a poll.
    await page.waitForFunction((want) => document.querySelector('#task .card [data-figure="waiting"]')?.textContent === want, '1', { timeout: 30_000 });
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
    const r = await exec(process.execPath, [CLI, 'monitor', '--redis', redis.url, '--port', '0', '--bind', '0.0.0.0'], { timeout: 30_000 }).then(
      () => null,
      (err: { code: number; stderr: string }) => err,
    );
    assert.ok(r, 'the monitor started');
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /--bind 0\.0\.0\.0 is reachable from other machines: give the actions' token/);
  });

  it('against a port with nothing listening, exits non-zero with the target', async () => {
    const closed = await freePort();
    const r = await exec(process.execPath, [CLI, 'monitor', '--redis', `redis://127.0.0.1:${closed}`, '--port', '0'], { timeout: 30_000 }).then(
      () => null,
      (err: { code: number; stderr: string }) => err,
    );
    assert.ok(r, 'the monitor started');
    assert.notEqual(r.code, 0);
    assert.ok(r.stderr.includes(`127.0.0.1:${closed}`), r.stderr);
  });

  it('serves Prometheus: a real Prometheus scrapes /metrics and reads pages fetched equal to the crawl', async function () {
    const bin = ['/usr/bin/prometheus', '/usr/local/bin/prometheus'].find((p) => existsSync(p));
    if (!bin) skipBecause(this, 'prometheus is missing (apt-get install prometheus; scripts/setup.sh test installs it)');
    const dir = mkdtempSync(join(tmpdir(), 'cs-prom-'));
    const promPort = await freePort();
    const target = new URL(monitorUrl).host;
    writeFileSync(join(dir, 'prometheus.yml'), `global: { scrape_interval: 1s, evaluation_interval: 1s }\nscrape_configs:\n  - job_name: crawl-studio\n    static_configs: [{ targets: ['${target}'] }]\n`);
    const prom = spawn(bin, [`--config.file=${join(dir, 'prometheus.yml')}`, `--storage.tsdb.path=${join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${promPort}`], { stdio: 'ignore' });
    children.push(prom);
    try {
      const status = await statusJson();
      const query = async (q: string) => {
        const r = (await (await fetch(`http://127.0.0.1:${promPort}/api/v1/query?query=${encodeURIComponent(q)}`)).json()) as { data: { result: { metric: Record<string, string>; value: [number, string] }[] } };
        return r.data.result;
      };
      const fetched = await until('Prometheus to have scraped the monitor', async () => (await query('crawl_studio_pages_fetched_total{task="mon"}'))[0], 90_000);
      assert.equal(Number(fetched.value[1]), status.stats!.done);
      assert.equal(fetched.metric.job, 'crawl-studio');
      const up = await query('up{job="crawl-studio"}');
      assert.equal(up[0]?.value[1], '1');
      const items = await query('crawl_studio_items_extracted_total{task="mon"}');
      assert.equal(Number(items[0]?.value[1]), status.stats!.items);
      // The exposition has no URL in it: labels are task and reason only.
      const text = await (await fetch(`${monitorUrl}/metrics`)).text();
      assert.ok(!text.includes(web.url), 'no URL in a label');
      assert.match(text, /^crawl_studio_pages_waiting\{task="mon"\} 1$/m);
      // The killed worker still counts until its heartbeat is a minute old (WORKER_GONE_AFTER_MS, every view's rule).
      assert.match(text, /^crawl_studio_workers [01]$/m);
      assert.match(text, /^crawl_studio_pages_failed_total\{task="mon",reason="http-404"\} 0$/m, 'the retried page left the failures');
    } finally {
      prom.kill('SIGTERM');
      await new Promise((r) => prom.once('exit', r));
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
