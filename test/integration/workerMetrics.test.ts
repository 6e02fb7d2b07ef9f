import { skipBecause } from '../support/skip';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { session, writeTask } from '../support/crawl';
import { freePort, startRedis, type HttpServer, type RedisServer } from '../support/services';
import { pagesTaskYaml, servePagesSite } from '../support/pagesSite';

// `crawl-studio worker --metrics-port N` (issue 31, item 4): a worker's own Prometheus /metrics, on 127.0.0.1 by
// default, counted from its BullMQ jobs (worker/metrics.ts). Everything real: a redis-server, a local site with a
// 404, a run started by a session without local workers, the CLI worker joining it, and a real Prometheus scraping
// the worker, read back through Prometheus's HTTP API.

const CLI = resolve('dist/cli.js');
const PAGES = 6;

async function until<T>(what: string, fn: () => Promise<T | null | undefined | false>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline)
      throw new Error(`timed out waiting for ${what}${last ? ` (last error: ${String(last)})` : ''}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** The value of one sample of the exposition, or null. */
function sample(text: string, name: string, labels: string): number | null {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{${labels}} `));
  return line ? Number(line.slice(line.lastIndexOf(' ') + 1)) : null;
}

describe("crawl-studio worker --metrics-port: a worker's own Prometheus metrics (issue 31)", function () {
  this.timeout(300_000);
  let redis: RedisServer;
  let web: HttpServer;
  const children: ChildProcess[] = [];

  before(async () => {
    redis = await startRedis();
    web = await servePagesSite(PAGES);
  });

  after(async () => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    await web?.close();
    await redis?.stop();
  });

  it('counts the pages it fetched and failed, by reason, and their durations; a real Prometheus reads them', async function () {
    const task = await writeTask(pagesTaskYaml('wm', `${web.url}/`));
    const s = session(task, redis.url, { workers: 0 });
    const running = s.run();
    const worker = spawn(process.execPath, [CLI, 'worker', task.file, '--redis', redis.url, '--metrics-port', '0'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(worker);
    let out = '';
    worker.stdout.on('data', (d: Buffer) => (out += d.toString()));
    worker.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const url = await until<string>(
      'the worker to say where its metrics are',
      async () => /metrics on (http:\/\/127\.0\.0\.1:\d+\/metrics)/.exec(out)?.[1],
      60_000,
    );
    const result = await running;
    await s.close();
    const stats = result.status.stats!;
    assert.equal(stats.done, PAGES + 1);
    assert.equal(stats.failed, 1);

    const text = await (await fetch(url)).text();
    assert.equal(sample(text, 'crawl_studio_worker_pages_fetched_total', 'task="wm"'), stats.done, text);
    assert.equal(sample(text, 'crawl_studio_worker_pages_failed_total', 'task="wm",reason="http-404"'), 1, text);
    assert.equal(sample(text, 'crawl_studio_worker_items_extracted_total', 'task="wm"'), stats.items, text);
    // Every attempt timed: the pages fetched and the one that failed.
    assert.equal(sample(text, 'crawl_studio_fetch_duration_seconds_count', 'task="wm"'), stats.done + 1, text);
    assert.equal(
      sample(text, 'crawl_studio_fetch_duration_seconds_bucket', 'le="+Inf",task="wm"'),
      stats.done + 1,
      text,
    );
    assert.match(text, /^# TYPE crawl_studio_fetch_duration_seconds histogram$/m);
    assert.match(text, /^crawl_studio_worker_concurrency \d+$/m);
    assert.match(text, /^crawl_studio_worker_process_resident_memory_bytes \d+/m);
    assert.ok(!text.includes(web.url), 'no URL in a label');
    assert.equal((await fetch(url.replace('/metrics', '/other'))).status, 404);

    const bin = ['/usr/bin/prometheus', '/usr/local/bin/prometheus'].find((p) => existsSync(p));
    if (!bin)
      skipBecause(this, 'prometheus is missing (apt-get install prometheus; scripts/setup.sh test installs it)');
    const dir = mkdtempSync(join(tmpdir(), 'cs-prom-worker-'));
    const promPort = await freePort();
    writeFileSync(
      join(dir, 'prometheus.yml'),
      `global: { scrape_interval: 1s, evaluation_interval: 1s }\nscrape_configs:\n  - job_name: crawl-studio-workers\n    static_configs: [{ targets: ['${new URL(url).host}'] }]\n`,
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
      const query = async (q: string) => {
        const r = (await (
          await fetch(`http://127.0.0.1:${promPort}/api/v1/query?query=${encodeURIComponent(q)}`)
        ).json()) as { data: { result: { metric: Record<string, string>; value: [number, string] }[] } };
        return r.data.result;
      };
      const fetched = await until(
        'Prometheus to have scraped the worker',
        async () => (await query('crawl_studio_worker_pages_fetched_total{task="wm"}'))[0],
        90_000,
      );
      assert.equal(Number(fetched.value[1]), stats.done);
      assert.equal(fetched.metric.job, 'crawl-studio-workers');
      const timed = await query('crawl_studio_fetch_duration_seconds_count{task="wm"}');
      assert.equal(Number(timed[0]?.value[1]), stats.done + 1);
      const failed = await query('sum by (reason) (crawl_studio_worker_pages_failed_total{task="wm"})');
      assert.deepEqual(
        failed.map((f) => [f.metric.reason, Number(f.value[1])]),
        [['http-404', 1]],
      );
    } finally {
      prom.kill('SIGTERM');
      await new Promise((r) => prom.once('exit', r));
      rmSync(dir, { recursive: true, force: true });
    }
    worker.kill('SIGTERM');
    await new Promise((r) => worker.once('exit', r));
  });

  it('refuses a --metrics-port that is not a port, naming the flag', async () => {
    const task = await writeTask(`name: wm2\nstart: [${web.url}/]\nrules:\n  - name: page\n    match: ["**"]\n`);
    const child = spawn(
      process.execPath,
      [CLI, 'worker', task.file, '--redis', redis.url, '--metrics-port', 'ninety'],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    children.push(child);
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.stdout.on('data', (d: Buffer) => (err += d.toString()));
    const code = await new Promise<number | null>((r) => child.once('exit', (c) => r(c)));
    assert.equal(code, 2, err); // a wrong command line
    assert.match(err, /--metrics-port 'ninety': expected a port number/);
  });
});
