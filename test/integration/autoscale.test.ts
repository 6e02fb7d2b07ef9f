import assert from 'node:assert/strict';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Redis } from 'ioredis';
import { serveHttp, startRedis, type HttpServer, type RedisServer } from '../support/services';
import { bufferedPages, session, writeTask } from '../support/crawl';
import { linkedPagesTask } from '../support/linkedPagesTask';
import { readTaskScaling, scalingLines } from '../../src/observe/scaling';
import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { readLiveWorkers } from '../../src/frontier/fleet';
import { until } from '../support/until';

const exec = promisify(execFile);
/** `crawl-studio ARGS…` as a user runs it: exit code and output, whatever the code. */
async function cli(...args: string[]): Promise<{ code: number; out: string }> {
  try {
    const r = await exec(process.execPath, [resolve('dist/cli.js'), ...args], { encoding: 'utf8' });
    return { code: 0, out: r.stdout + r.stderr };
  } catch (e) {
    const err = e as { code: number; stdout: string; stderr: string };
    return { code: err.code, out: err.stdout + err.stderr };
  }
}

// Issue 36: a worker that sizes its own concurrency (`--concurrency MIN..MAX`), run as the CLI runs it (a real worker
// process from dist/worker.js, real Redis, a real site). Asserted on outcomes and on the decisions the worker logs and
// publishes, never on how fast it reacted.

/** A decision line of a worker's log: "concurrency 16 → 8: sites answered 429/503 …". */
interface Decision {
  readonly from: number;
  readonly to: number;
  readonly reason: string;
}

function decisionsOf(lines: readonly string[]): Decision[] {
  const out: Decision[] = [];
  for (const line of lines) {
    const m = /concurrency (\d+) → (\d+): (.*)$/.exec(line);
    if (m) out.push({ from: Number(m[1]), to: Number(m[2]), reason: m[3]! });
  }
  return out;
}

/**
 * A site of one hub page linking to `pages` leaf pages, each answered after `delayMs`; `limit` requests in flight at
 * most, more get 503 (a site that sheds load). Records the in-flight count at each request's arrival.
 */
async function serveSite(pages: number, delayMs: number, limit = Infinity) {
  let inFlight = 0;
  const arrivals: number[] = [];
  const fetched = new Map<string, number>();
  let shed = 0;
  const handler = (req: IncomingMessage, res: ServerResponse) => {
    if (req.url === '/robots.txt') return void res.writeHead(404).end();
    inFlight++;
    arrivals.push(inFlight);
    res.once('close', () => inFlight--);
    if (inFlight > limit) {
      shed++;
      return void res.writeHead(503, { 'content-type': 'text/plain' }).end('busy');
    }
    setTimeout(() => {
      fetched.set(req.url!, (fetched.get(req.url!) ?? 0) + 1);
      const links =
        req.url === '/' ? Array.from({ length: pages }, (_, i) => `<a href="/p/${i + 1}">p${i + 1}</a>`).join('') : '';
      res
        .writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
        .end(`<html><body><h1>page ${req.url}</h1>${links}</body></html>`);
    }, delayMs);
  };
  const server: HttpServer = await serveHttp(handler);
  return { server, arrivals, fetched, shed: () => shed };
}

describe("autoscaling a worker's concurrency (issue 36)", function () {
  this.timeout(300_000);
  let redis: RedisServer;
  let site: Awaited<ReturnType<typeof serveSite>> | undefined;
  before(async () => (redis = await startRedis()));
  afterEach(async () => {
    await site?.server.close();
    site = undefined;
  });
  after(async () => redis?.stop());

  it('backs off a site that answers 503 above 8 requests in flight: nothing fails, every page stored, settled at or under 8', async () => {
    const PAGES = 600;
    site = await serveSite(PAGES, 20, 8);
    // The task lets a host take 32 at once: the site's own limit (8) is what the worker must find.
    const task = await writeTask(
      linkedPagesTask({ name: 'shedding', start: [`${site.server.url}/`], perHost: { concurrency: 32 } }).replace(
        'rules:',
        'request: { timeout: 10s, retries: { attempts: 10, backoff: fixed, delay: 200ms } }\nrules:',
      ),
    );
    const lines: string[] = [];
    const s = session(task, redis.url, {
      workers: 1,
      concurrency: { kind: 'auto', min: 2, max: 32 },
      onWorkerLog: (_pid, line) => lines.push(line),
    });
    const result = await s.run();
    await s.close();
    if (process.env.AUTOSCALE_TEST_LOG)
      require('node:fs').writeFileSync(process.env.AUTOSCALE_TEST_LOG, lines.join('\n'));

    assert.equal(
      result.status.stats!.failed,
      0,
      `no page failed: ${lines.filter((l) => /concurrency|failed/.test(l)).join('\n')}`,
    );
    assert.equal(site.fetched.size, PAGES + 1, 'every page fetched');
    for (const [page, n] of site.fetched) assert.equal(n, 1, `${page} answered with a page ${n} times`);
    const stored = await bufferedPages(redis.url, 'shedding');
    assert.equal(new Set(stored.map((p) => p.url)).size, PAGES + 1, 'every page stored');

    const decisions = decisionsOf(lines);
    assert.ok(site.shed() > 0, "the worker probed above the site's limit at first (it starts at 16)");
    // Backed off on the 503s, with the reason in the log: the worker's concurrency, or the host's own limit
    // (worker/hostThrottle.ts), whichever met them first. On a busy machine the host's limit can settle it before the
    // concurrency's first window is judged, and the crawl end with no concurrency decision at all.
    assert.ok(
      decisions.some((d) => d.to < d.from && /sites answered 429\/503/.test(d.reason)) ||
        lines.some((l) =>
          /host \S+ answered 429\/503 with \d+ request\(s\) out: at most \d+ request\(s\) at once/.test(l),
        ),
      `a back-off on 503s: ${lines.join('\n')}`,
    );
    const last = decisions.at(-1);
    const secondHalf = site.arrivals.slice(Math.floor(site.arrivals.length / 2));
    assert.ok(
      (last !== undefined && last.to <= 8) || Math.max(...secondHalf) <= 8,
      `settled at or under 8: last decision ${last ? `${last.from} → ${last.to}` : 'none'}, in flight in the second half up to ${Math.max(...secondHalf)}`,
    );
  });

  /**
   * Starts an autoscaled crawl (one worker, 2..64) of a site of `pages` pages that answers in 200 ms: the worker's
   * log lines, the session, a connection to watch Redis with, and the run's end.
   */
  async function crawlSlowSite(name: string, pages: number) {
    const slow = (site = await serveSite(pages, 200));
    const task = await writeTask(
      linkedPagesTask({ name, start: [`${slow.server.url}/`], perHost: { concurrency: 64 } }),
    );
    const lines: string[] = [];
    const s = session(task, redis.url, {
      workers: 1,
      concurrency: { kind: 'auto', min: 2, max: 64 },
      onWorkerLog: (_pid, line) => lines.push(line),
    });
    return { site: slow, task, lines, s, watcher: new Redis(redis.url), running: s.run() };
  }

  it('grows past 16 on a site that answers in 200 ms, and publishes its decisions in its heartbeat for status', async () => {
    // At 16 requests a 200 ms site gives 80 pages/s: the first window (20 pages) is judged within a few seconds and
    // 1,500 pages keep the worker busy for far longer than that at any concurrency it can reach (≤ 64: ≥ 4.7 s).
    const PAGES = 1_500;
    const { site, lines, s, watcher, running } = await crawlSlowSite('slowsite', PAGES);
    let seenInStatus: string[] = [];
    // What `status` prints, read while the crawl runs (its heartbeat goes with the worker when it stops).
    const poll = setInterval(() => {
      void readTaskScaling(watcher, 'slowsite').then((sc) => {
        if (sc.workers.some((w) => w.autoscale?.last)) seenInStatus = scalingLines(sc, Date.now());
      });
    }, 250);
    const result = await running.finally(() => clearInterval(poll));
    await s.close();
    watcher.disconnect();

    assert.equal(
      result.status.stats!.failed,
      0,
      `no page failed: ${JSON.stringify(result.status.stats!.failures)}\n${lines.filter((l) => /concurrency|fail|error/i.test(l)).join('\n')}`,
    );
    assert.equal(site.fetched.size, PAGES + 1);
    const decisions = decisionsOf(lines);
    const peak = Math.max(16, ...decisions.map((d) => d.to));
    assert.ok(peak > 16, `grew past 16: ${lines.filter((l) => /concurrency/.test(l)).join('\n')}`);
    assert.ok(
      site.arrivals.some((n) => n > 16),
      'the site saw more than 16 requests in flight',
    );
    assert.ok(
      seenInStatus.some((l) => /concurrency \d+ \(autoscaled 2\.\.64, peak \d+\)/.test(l)),
      `status: ${seenInStatus.join('\n')}`,
    );
    assert.ok(
      seenInStatus.some((l) => /last change .*: concurrency \d+ → \d+: .*pages\/s at \d+, CPU \d+%/.test(l)),
      `status: ${seenInStatus.join('\n')}`,
    );
  });

  it('takes a resize by hand from `crawl-studio resize` and holds it; refuses one outside its range, saying the range', async () => {
    const { task, lines, s, watcher, running } = await crawlSlowSite('resized', 1_500);
    try {
      const worker = await until('the worker to beat', async () =>
        (await readLiveWorkers(watcher)).find((b) => b.tasks.includes('resized')),
      );
      const refused = await cli('resize', task.file, worker.id, '100', '--redis', redis.url);
      assert.equal(refused.code, 2, refused.out);
      assert.match(refused.out, new RegExp(`within worker ${worker.id}'s range, 2\\.\\.64`));
      const asked = await cli('resize', task.file, worker.id, '5', '--redis', redis.url);
      assert.equal(asked.code, 0, asked.out);
      assert.match(asked.out, /asked worker .* to run at concurrency 5/);
      // Taken at its next judged window, then held: every later decision says so, none moves it.
      const beat = await until('the worker to run at 5', async () => {
        const b = (await readLiveWorkers(watcher)).find((w) => w.id === worker.id);
        return b?.concurrency === 5 && b.autoscale?.last?.to === 5 ? b : undefined;
      });
      assert.match(beat.autoscale!.last!.reason, /resized by hand; held for 10 min/);
    } finally {
      // Seen what it needs: the rest of the 1,500 pages would take a minute at 5.
      s.stop({ end: true });
    }
    const result = await running;
    await s.close();
    watcher.disconnect();
    assert.equal(result.status.stats!.failed, 0);
    const decisions = decisionsOf(lines);
    const byHand = decisions.findIndex((d) => d.to === 5 && /resized by hand/.test(d.reason));
    assert.ok(byHand >= 0, lines.filter((l) => /concurrency/.test(l)).join('\n'));
    assert.deepEqual(
      decisions.slice(byHand + 1),
      [],
      'no decision undid the resize while it was held (the test ends well within 10 minutes)',
    );
  });
});
