import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { startTestMonitor } from '../support/monitor';
import { launchCrawl } from '../../src/run/launcher';
import { loadTaskFile } from '../../src/workspace/taskFile';
import { WORKER_SCRIPT } from '../support/crawl';
import { postgresOrReason, type PostgresServer } from '../support/postgres';
import { skipBecause } from '../support/skip';
import { until } from '../support/until';
import { serveHttp, startRedis, type HttpServer, type RedisServer } from '../support/services';

// What changed since the last crawl (issue 33), end to end: a real site whose content changes between two runs
// (a price changed, an item added, one removed, one unchanged), crawled by real workers into SQLite and into
// PostgreSQL, then `crawl-studio changes` and `export --changes` from the built CLI.

const exec = promisify(execFile);
const CLI = resolve('dist/cli.js');

type Catalogue = Record<string, { name: string; price: string }>;

/** `hold`, when set, keeps a product page's answer until it resolves (a page a worker is still fetching). */
function shop(catalogue: () => Catalogue, hold: () => Promise<void> | null = () => null) {
  return serveHttp((req, res) => {
    res.setHeader('content-type', 'text/html');
    const m = /^\/p\/(\w+)$/.exec(req.url ?? '');
    void Promise.resolve(m ? hold() : null).then(() => {
      const items = catalogue();
      if (m) {
        const it = items[m[1]!];
        if (!it) return res.writeHead(404).end('<p>gone</p>');
        return res.end(
          `<article><h1>${it.name}</h1><span class="sku">${m[1]}</span><span class="price">${it.price}</span></article>`,
        );
      }
      res.end(
        `<ul>${Object.keys(items)
          .map((k) => `<li><a href="/p/${k}">${k}</a></li>`)
          .join('')}</ul>`,
      );
    });
  });
}

function taskYaml(site: string, store: string, extra = ''): string {
  return `name: watched
start: [${site}/]
store: { url: "${store}" }
${extra}
rules:
  - name: list
    match: ["${site}/"]
    follow:
      - selector: "li a"
        to: product
  - name: product
    match: ["**/p/*"]
    items:
      - type: product
        scope: article
        key: [sku]
        fields:
          sku: .sku
          name: h1
          price: .price
`;
}

const BEFORE: Catalogue = {
  a: { name: 'Apple', price: '10.00' },
  b: { name: 'Bread', price: '2.50' },
  c: { name: 'Cheese', price: '7.00' },
};
const AFTER: Catalogue = {
  a: { name: 'Apple', price: '12.00' },
  b: { name: 'Bread', price: '2.50' },
  d: { name: 'Dates', price: '4.00' },
};

describe('what changed since the last crawl (issue 33)', function () {
  this.timeout(240_000);
  let redis: RedisServer;
  let web: HttpServer;
  let catalogue: Catalogue = BEFORE;
  // Product pages held while it is set, and how many were asked for meanwhile.
  let held: Promise<void> | null = null;
  let heldRequests = 0;
  let pg: PostgresServer | null = null;
  let noPg = '';
  const dir = mkdtempSync(join(tmpdir(), 'cs-changes-'));

  before(async () => {
    redis = await startRedis();
    web = await shop(
      () => catalogue,
      () => {
        if (held) heldRequests++;
        return held;
      },
    );
    const started = await postgresOrReason();
    if (typeof started === 'string') noPg = started;
    else pg = started;
  });
  after(async () => {
    await web?.close();
    await redis?.stop();
    await pg?.destroy();
    rmSync(dir, { recursive: true, force: true });
  });

  async function crawl(file: string): Promise<string> {
    const task = await loadTaskFile(file);
    const launch = launchCrawl({
      task,
      redisUrl: redis.url,
      workers: 1,
      concurrency: 2,
      workerScript: WORKER_SCRIPT,
      pollMs: 100,
      fresh: true,
    });
    const result = await launch.done;
    assert.ok(result.summary, 'the run finalized');
    return result.run.run;
  }

  async function changesJson(file: string, ...args: string[]) {
    const { stdout } = await exec(process.execPath, [CLI, 'changes', file, '--json', ...args]);
    return JSON.parse(stdout) as {
      runs: { run: string; added: number; changed: number; removed: number; complete: boolean }[];
      changes: Record<string, unknown>[];
    };
  }

  for (const backend of ['sqlite', 'postgres'] as const) {
    it(`lists exactly the changed price, the added and the removed item (${backend}); a run cut short marks nothing removed`, async function () {
      if (backend === 'postgres' && !pg) skipBecause(this, noPg);
      const store =
        backend === 'sqlite' ? `sqlite:${join(dir, 'watched.sqlite')}` : await pg!.createDatabase('watched');
      const file = join(dir, `${backend}.crawl.yaml`);
      writeFileSync(file, taskYaml(web.url, store));
      catalogue = BEFORE;
      const first = await crawl(file);
      catalogue = AFTER;
      const second = await crawl(file);

      const report = await changesJson(file);
      assert.deepEqual(
        report.runs.map((r) => [r.run, r.added, r.changed, r.removed, r.complete]),
        [[second, 1, 1, 1, true]],
      );
      assert.deepEqual(
        report.changes.map((c) => [c.change, c.key, c.field, c.old, c.new]),
        [
          ['changed', 'a', 'price', '10.00', '12.00'],
          ['removed', 'c', null, { sku: 'c', name: 'Cheese', price: '7.00' }, null],
          ['added', 'd', null, null, { sku: 'd', name: 'Dates', price: '4.00' }],
        ],
      );
      const since = await changesJson(file, '--since', first);
      assert.deepEqual(
        since.runs.map((r) => r.run),
        [second],
      );
      // A --since that is neither a run nor a date: the runs it could be, and not the CLI's whole overview under it.
      const wrong = await exec(process.execPath, [CLI, 'changes', file, '--since', 'bogus']).catch(
        (e: { code: number; stderr: string }) => e,
      );
      assert.ok('code' in wrong && wrong.code === 2, JSON.stringify(wrong));
      assert.equal(
        wrong.stderr.trim(),
        `crawl-studio: --since 'bogus' is neither a run of task 'watched' with history nor a date (e.g. 2026-12-01): its runs with history are ${first}, ${second}`,
      );
      const text = (await exec(process.execPath, [CLI, 'changes', file])).stdout;
      assert.match(text, /1 added, 1 changed, 1 removed/);
      assert.match(text, /~ product a: price: "10\.00" → "12\.00"/);
      assert.doesNotMatch(text, /product b/, 'the unchanged item is not listed');
      const csv = (await exec(process.execPath, [CLI, 'export', file, '--changes', '--format', 'csv'])).stdout
        .trim()
        .split(/\r?\n/);
      assert.equal(csv[0], 'run,type,key,change,field,old,new,at');
      assert.equal(csv.length, 4);
      // The run summary of `crawl-studio run` says it too (a third run: nothing changed).
      const runOut = (await exec(process.execPath, [CLI, 'run', file, '--redis', redis.url, '--workers', '1'])).stdout;
      assert.match(runOut, /items changed {3}0 added, 0 changed, 0 removed \(crawl-studio changes /);

      // The page limit cuts the next run short: it sees a and nothing else, and must not call b and d removed.
      writeFileSync(file, taskYaml(web.url, store, 'scope: { maxPages: 2 }'));
      const cut = await crawl(file);
      const partial = await changesJson(file);
      assert.deepEqual(
        partial.runs.map((r) => [r.run, r.removed, r.complete]),
        [[cut, 0, false]],
      );
      assert.deepEqual(partial.changes, []);
    });
  }

  it('lists what a run stopped midway saw change, and marks nothing removed', async () => {
    const file = join(dir, 'stopped.crawl.yaml');
    // One page at a time, half a second apart: the run is still going when it is stopped.
    writeFileSync(
      file,
      // A task of its own: the feed test below reads the store of `watched`'s latest run.
      taskYaml(
        web.url,
        `sqlite:${join(dir, 'stopped.sqlite')}`,
        'politeness: { perHost: { concurrency: 1, delay: 500ms } }',
      ).replace('name: watched', 'name: halted'),
    );
    catalogue = BEFORE;
    const first = await crawl(file);
    // Every price changes: whichever products the stopped run reaches, each is a change it saw.
    catalogue = Object.fromEntries(Object.entries(BEFORE).map(([k, v]) => [k, { ...v, price: `${v.price}1` }]));
    const launch = launchCrawl({
      task: await loadTaskFile(file),
      redisUrl: redis.url,
      workers: 1,
      concurrency: 1,
      workerScript: WORKER_SCRIPT,
      pollMs: 100,
      fresh: true,
    });
    const conn = new Redis(redis.url);
    try {
      // The list page and one product: then Stop (the editor's Stop Crawl), with products left to fetch.
      for (;;) {
        const run = await conn.hget('cs:{halted}:#meta', 'run');
        if (run && run !== first && Number(await conn.hget(`cs:{halted}:#stats:${run}`, 'items')) >= 1) break;
        await new Promise((r) => setTimeout(r, 50));
      }
      launch.end();
    } finally {
      conn.disconnect();
    }
    const result = await launch.done;
    assert.equal(result.outcome, 'stopped');
    const seen = result.status.stats!.items;
    assert.ok(seen >= 1 && seen < 3, `${seen} products seen before the stop`);
    // The launch says it too (the CLI's summary prints it): a stopped run has no finish summary, but its close.
    const closed = result.stored.changes;
    assert.deepEqual([closed?.added, closed?.changed, closed?.removed, closed?.complete], [0, seen, 0, false]);
    // The changes it saw were recorded as it stored them, but it never closed its history: `changes`, the feed and
    // the webhook never showed them, and the next run saw nothing changed.
    const report = await changesJson(file);
    assert.deepEqual(
      report.runs.map((r) => [r.run, r.added, r.changed, r.removed, r.complete]),
      [[result.run.run, 0, seen, 0, false]],
    );
    assert.ok(
      report.changes.every((c) => c.change === 'changed' && c.field === 'price'),
      JSON.stringify(report.changes),
    );
    const text = (await exec(process.execPath, [CLI, 'changes', file])).stdout;
    assert.match(
      text,
      new RegExp(
        `^run ${result.run.run} \\(stopped \\S+\\): 0 added, ${seen} changed, 0 removed — stopped before its pages were done, so no item was marked removed$`,
        'm',
      ),
    );
  });

  /**
   * A task of its own crawled once, then every price changed and the product pages held (until `release`): the next
   * run's products are in flight when a test stops it.
   */
  async function fleetStopTask(name: string, priceSuffix: string): Promise<{ file: string; release: () => void }> {
    const file = join(dir, `${name}.crawl.yaml`);
    writeFileSync(
      file,
      taskYaml(web.url, `sqlite:${join(dir, `${name}.sqlite`)}`).replace('name: watched', `name: ${name}`),
    );
    catalogue = BEFORE;
    await crawl(file);
    catalogue = Object.fromEntries(
      Object.entries(BEFORE).map(([k, v]) => [k, { ...v, price: `${v.price}${priceSuffix}` }]),
    );
    let release!: () => void;
    held = new Promise<void>((r) => (release = r));
    heldRequests = 0;
    return { file, release };
  }

  it("counts the pages fleet workers finish after a stop in the stopped run's changes", async () => {
    const { file, release } = await fleetStopTask('fleetstop', '9');
    // The driver starts no worker: every page is fetched by a fleet worker, as on another machine.
    const waits: string[] = [];
    let released = false;
    const letGo = () => {
      released = true;
      release();
    };
    const launch = launchCrawl({
      task: await loadTaskFile(file),
      redisUrl: redis.url,
      workers: 0,
      concurrency: 1,
      workerScript: WORKER_SCRIPT,
      pollMs: 100,
      fresh: true,
      // The driver says why its end waits, and the held pages are let go then; without the wait they are let go
      // anyway, after the close (below).
      onStopWaiting: (run, pages, boundMs) => {
        waits.push(`${run.run}: ${pages} pages, at most ${boundMs} ms${released ? ', after the release' : ''}`);
        letGo();
      },
    });
    const worker = spawn(process.execPath, [CLI, 'worker', file, '--redis', redis.url, '--log-stats', '0'], {
      stdio: 'ignore',
    });
    try {
      await until('the fleet worker to fetch every product', () => heldRequests === 3);
      await exec(process.execPath, [CLI, 'stop', file, '--redis', redis.url]);
      setTimeout(letGo, 3_000).unref();
      const result = await launch.done;
      assert.equal(result.outcome, 'stopped');
      // Every product's price changed, and all three were fetched: the close counts them, as `changes` lists them.
      const closed = result.stored.changes;
      assert.deepEqual([closed?.added, closed?.changed, closed?.removed, closed?.complete], [0, 3, 0, false]);
      assert.equal(result.status.stats?.items, 3);
      const report = await changesJson(file);
      assert.deepEqual(
        report.runs.map((r) => [r.run, r.added, r.changed, r.removed, r.complete]),
        [[result.run.run, 0, 3, 0, false]],
      );
      assert.equal(report.changes.length, 3, JSON.stringify(report.changes));
      assert.deepEqual(waits, [`${result.run.run}: 3 pages, at most 30000 ms`]);
    } finally {
      letGo();
      held = null;
      worker.kill('SIGKILL');
    }
  });

  it("the same from `crawl-studio run --workers 0` (docs/deploy.md's driver of a fleet), which says why its end waits", async () => {
    const { file, release } = await fleetStopTask('fleetcli', '7');
    // `--workers 0` was refused ("expected a whole number of at least 1"), though deploy.md starts crawls so.
    const driver = spawn(process.execPath, [CLI, 'run', file, '--workers', '0', '--fresh', '--redis', redis.url], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    driver.stdout.on('data', (d: Buffer) => (out += d.toString()));
    driver.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((r) => driver.once('exit', (code) => r(code)));
    const worker = spawn(process.execPath, [CLI, 'worker', file, '--redis', redis.url, '--log-stats', '0'], {
      stdio: 'ignore',
    });
    const waiting =
      /^Run \S+ was stopped: waiting for 3 pages other workers are still fetching \(at most 30 s\), so that what they find is counted with the run\.$/m;
    try {
      await until('the fleet worker to fetch every product', () => heldRequests === 3);
      await exec(process.execPath, [CLI, 'stop', file, '--redis', redis.url]);
      // Let go once the driver says it waits, or after 3 s: without the wait, after its close.
      await until('the driver to wait', () => waiting.test(out), 3_000).catch(() => undefined);
      release();
      assert.equal(await exited, 0, out);
      assert.match(out, waiting);
      assert.match(out, /^Crawl 'fleetcli' stopped in /m, out);
      // Said at the start, so that a driver alone does not look like a crawl that hangs.
      assert.ok(
        out.includes(
          `No local worker (--workers 0): the pages wait for \`crawl-studio worker ${file}\` on the fleet's machines`,
        ),
        out,
      );
      assert.match(
        out,
        /items changed {3}0 added, 3 changed, 0 removed; not complete \(it was stopped before its pages were done\)/,
        out,
      );
    } finally {
      release();
      held = null;
      worker.kill('SIGKILL');
      driver.kill('SIGKILL');
    }
  });

  it("the monitor serves the task's changes as an Atom feed, one entry per run", async () => {
    const conn = new Redis(redis.url);
    const monitor = await startTestMonitor(conn);
    try {
      const res = await fetch(`${monitor.url}/api/tasks/watched/changes.atom`);
      assert.equal(res.status, 200);
      assert.match(res.headers.get('content-type') ?? '', /application\/atom\+xml/);
      const xml = await res.text();
      assert.match(xml, /^<\?xml version="1\.0" encoding="utf-8"\?>\n<feed xmlns="http:\/\/www\.w3\.org\/2005\/Atom">/);
      const titles = [...xml.matchAll(/<title>(watched: [^<]*)<\/title>/g)].map((m) =>
        m[1]!.replace(/ \(run .*\)$/, ''),
      );
      assert.deepEqual(titles, [
        'watched: 0 added, 0 changed, 0 removed',
        'watched: 0 added, 0 changed, 0 removed',
        'watched: 1 added, 1 changed, 1 removed',
        'watched: 3 added, 0 changed, 0 removed',
      ]);
      assert.match(xml, /~ product a: price: &quot;10\.00&quot; → &quot;12\.00&quot;/);
      assert.equal((await fetch(`${monitor.url}/api/tasks/nosuch/changes.atom`)).status, 404);
    } finally {
      await monitor.close();
      conn.disconnect();
    }
  });

  it("the monitor's task page and /metrics count each run's added, changed and removed items, as `changes` does", async () => {
    const file = join(dir, 'metered.crawl.yaml');
    writeFileSync(
      file,
      taskYaml(web.url, `sqlite:${join(dir, 'metered.sqlite')}`).replace('name: watched', 'name: metered'),
    );
    catalogue = BEFORE;
    await crawl(file);
    catalogue = AFTER;
    const second = await crawl(file);
    const cli = await changesJson(file, '--since', '2000-01-01');
    const conn = new Redis(redis.url);
    const monitor = await startTestMonitor(conn);
    try {
      const detail = (await (await fetch(`${monitor.url}/api/tasks/metered`)).json()) as {
        stored: {
          run: string;
          changes: { run: string; added: number; changed: number; removed: number } | null;
          changeRuns: { run: string; added: number; changed: number; removed: number; complete: boolean }[];
        };
      };
      assert.equal(detail.stored.run, second);
      assert.deepEqual(
        [detail.stored.changes?.added, detail.stored.changes?.changed, detail.stored.changes?.removed],
        [1, 1, 1],
      );
      assert.deepEqual(
        detail.stored.changeRuns.map((r) => [r.run, r.added, r.changed, r.removed, r.complete]),
        [...cli.runs].reverse().map((r) => [r.run, r.added, r.changed, r.removed, r.complete]),
        'newest first, the counts `changes` prints',
      );
      // A real HTTP scrape of /metrics: the current run's counts, with the task label.
      const res = await fetch(`${monitor.url}/metrics`);
      assert.equal(res.status, 200);
      const text = await res.text();
      for (const kind of ['added', 'changed', 'removed']) {
        assert.match(text, new RegExp(`^# TYPE crawl_studio_items_${kind}_total counter$`, 'm'));
        assert.match(
          text,
          new RegExp(`^crawl_studio_items_${kind}_total\\{task="metered"\\} 1$`, 'm'),
          text
            .split('\n')
            .filter((l) => l.includes('items_'))
            .join('\n'),
        );
      }
    } finally {
      await monitor.close();
      conn.disconnect();
    }
  });

  describe('notifications', () => {
    const received: { status: number; body: Record<string, unknown> }[] = [];
    let failFirst = 0;
    let hook: HttpServer;
    before(async () => {
      hook = await serveHttp((req, res) => {
        let text = '';
        req.on('data', (c: Buffer) => (text += c.toString()));
        req.on('end', () => {
          const status = failFirst-- > 0 ? 500 : 204;
          received.push({ status, body: JSON.parse(text) as Record<string, unknown> });
          res.writeHead(status).end();
        });
      });
    });
    after(async () => {
      delete process.env.CRAWL_STUDIO_WEBHOOK_URL;
      await hook?.close();
    });

    for (const fails of [0, 2]) {
      it(`a webhook ${fails ? 'that fails twice then succeeds ' : ''}gets one message with the run's changes, once`, async () => {
        received.length = 0;
        failFirst = fails;
        process.env.CRAWL_STUDIO_WEBHOOK_URL = `${hook.url}/hook?token=s3cret`;
        const file = join(dir, `notify-${fails}.crawl.yaml`);
        const notify =
          'notify:\n  webhook: ${CRAWL_STUDIO_WEBHOOK_URL}\n  when:\n    - moved: product.price\n      percent: 10';
        writeFileSync(file, taskYaml(web.url, `sqlite:${join(dir, `notify-${fails}.sqlite`)}`, notify));
        catalogue = BEFORE;
        await crawl(file);
        const firstRun = received.splice(0);
        assert.equal(
          firstRun.filter((r) => r.status === 204).length,
          0,
          'the first run added items but moved no price: no message',
        );
        catalogue = AFTER;
        const second = await crawl(file);
        assert.deepEqual(
          received.map((r) => r.status),
          [...Array(fails).fill(500), 204],
        );
        const body = received.at(-1)!.body;
        assert.equal(body.run, second);
        assert.deepEqual(body.counts, { added: 1, changed: 1, removed: 1 });
        assert.equal(body.matched, 1);
        assert.deepEqual(
          (body.changes as { key: string; change: string }[]).map((c) => [c.change, c.key]),
          [
            ['changed', 'a'],
            ['removed', 'c'],
            ['added', 'd'],
          ],
        );
        const text = (await exec(process.execPath, [CLI, 'changes', file])).stdout;
        assert.match(text, new RegExp(`notify: delivered after ${fails + 1} attempt`));
        assert.doesNotMatch(text, /s3cret/);
      });
    }

    it('a webhook that keeps failing is recorded with its reason, and the run still finishes', async () => {
      received.length = 0;
      failFirst = 100;
      process.env.CRAWL_STUDIO_WEBHOOK_URL = `${hook.url}/hook?token=s3cret`;
      const file = join(dir, 'notify-fail.crawl.yaml');
      writeFileSync(
        file,
        taskYaml(
          web.url,
          `sqlite:${join(dir, 'notify-fail.sqlite')}`,
          'notify: { webhook: "${CRAWL_STUDIO_WEBHOOK_URL}" }',
        ),
      );
      catalogue = BEFORE;
      await crawl(file);
      const text = (await exec(process.execPath, [CLI, 'changes', file])).stdout;
      assert.match(text, /notify: failed after 4 attempts — the webhook answered HTTP 500 \(after 4 attempts\)/);
      assert.doesNotMatch(text, /s3cret|\/hook/);
      // The monitor's task page shows the failed delivery with its reason, never the URL.
      const conn = new Redis(redis.url);
      const monitor = await startTestMonitor(conn);
      try {
        const body = await (await fetch(`${monitor.url}/api/tasks/watched`)).text();
        const notify = (
          JSON.parse(body) as { stored: { notify: { status: string; attempts: number; reason?: string } | null } }
        ).stored.notify;
        assert.deepEqual(notify, {
          status: 'failed',
          attempts: 4,
          reason: 'the webhook answered HTTP 500 (after 4 attempts)',
        });
        assert.doesNotMatch(body, /s3cret|\/hook/);
      } finally {
        await monitor.close();
        conn.disconnect();
      }
    });
  });
});
