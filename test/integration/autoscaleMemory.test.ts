import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { serveHttp, startRedis, type HttpServer, type RedisServer } from '../support/services';
import { bufferedPages, session, writeTask } from '../support/crawl';
import { browserOrSkip } from '../support/browser';
import { Redis } from 'ioredis';
import { descendants } from '../../src/worker/browser/processes';
import { readTaskScaling } from '../../src/observe/scaling';

// Issue 36: with rendered pages, `--concurrency auto` keeps a worker under `--max-memory`. A real worker process, real
// Redis, real Chromium, a real site of client-rendered pages that each hold memory while open. What is asserted is
// the worker's process tree as /proc shows it, sampled through the crawl, measured as the worker measures it (its
// own RSS plus its browsers' proportional set sizes, worker/browser/processes.ts), and the decisions it logged.

const MB = 2 ** 20;
const PAGES = Number(process.env.MEM_TEST_PAGES ?? 40);
/** What each page's script keeps resident while it is open. */
const PAGE_MB = Number(process.env.MEM_TEST_PAGE_MB ?? 96);

/** A hub page and `PAGES` pages whose heading a script writes after filling `PAGE_MB` of memory. */
async function serveRenderedSite() {
  const fetched = new Map<string, number>();
  const handler = (req: IncomingMessage, res: ServerResponse) => {
    if (req.url === '/robots.txt') return void res.writeHead(404).end();
    if (req.url === '/app.js') {
      // Touched, so resident: a typed array is allocated lazily.
      return void res.writeHead(200, { 'content-type': 'text/javascript' }).end(`
const big = new Uint8Array(${PAGE_MB} * 1024 * 1024);
for (let i = 0; i < big.length; i += 4096) big[i] = 1 + (i % 251);
window.big = big;
setTimeout(() => {
  const h = document.createElement('h1'); h.textContent = 'page ' + location.pathname;
  document.body.appendChild(h);
}, 300);`);
    }
    fetched.set(req.url!, (fetched.get(req.url!) ?? 0) + 1);
    const links =
      req.url === '/' ? Array.from({ length: PAGES }, (_, i) => `<a href="/p/${i + 1}">p${i + 1}</a>`).join('') : '';
    res
      .writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
      .end(`<!doctype html><html><body>${links}<script src="/app.js"></script></body></html>`);
  };
  const server: HttpServer = await serveHttp(handler);
  return { server, fetched };
}

/** Bytes of one process by its smaps_rollup (null once it is gone). */
function rollup(pid: number): { pss: number; rss: number } | null {
  try {
    const text = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
    const kb = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? 0) * 1024;
    return { pss: kb('Pss'), rss: kb('Rss') };
  } catch {
    return null;
  }
}

/** The worker's process tree now: as the worker measures it (its RSS, its browsers' PSS), and every RSS summed. */
function treeMemory(worker: number): { measured: number; rssSum: number } {
  const own = rollup(worker);
  if (!own) return { measured: 0, rssSum: 0 };
  let measured = own.rss;
  let rssSum = own.rss;
  for (const p of descendants(worker)) {
    const m = rollup(p.pid);
    if (!m) continue;
    measured += m.pss;
    rssSum += m.rss;
  }
  return { measured, rssSum };
}

interface Crawl {
  readonly peak: number;
  /** When (ms since epoch) a sample found the tree over the limit given, and by how much it measured. */
  readonly over: readonly { readonly at: number; readonly measured: number }[];
  readonly peakRssSum: number;
  readonly lines: string[];
  /** The reasons its heartbeat gave, changed or not. */
  readonly judged: string[];
  readonly failed: number;
  readonly fetched: Map<string, number>;
  readonly stored: number;
}

describe('autoscaling under a memory limit, with rendered pages (issue 36)', function () {
  this.timeout(600_000);
  let redis: RedisServer;
  let browserPath = '';
  let n = 0;

  before(async function () {
    browserPath = browserOrSkip(this);
    redis = await startRedis();
  });
  after(async () => redis?.stop());

  async function crawl(concurrency: number | { kind: 'auto'; min: number; max: number }, maxMemoryBytes?: number) {
    const site = await serveRenderedSite();
    const name = `rendered${++n}`;
    const task = await writeTask(`name: ${name}
start: ["${site.server.url}/"]
politeness: { perHost: { concurrency: 32 } }
request: { timeout: 60s, retries: { attempts: 3, backoff: fixed, delay: 200ms } }
rules:
  - name: page
    match: ["**"]
    browser: { waitFor: { selector: h1 }, timeout: 60s }
    follow:
      - selector: a
        to: page
    items:
      - type: page
        key: [title]
        fields:
          title: h1
`);
    const lines: string[] = [];
    const s = session(task, redis.url, {
      workers: 1,
      concurrency,
      ...(maxMemoryBytes !== undefined ? { maxMemoryBytes } : {}),
      browserPath,
      lockDurationMs: 60_000,
      onWorkerLog: (_pid, line) => lines.push(line),
    });
    let peak = 0;
    let peakRssSum = 0;
    const over: { at: number; measured: number }[] = [];
    const watcher = new Redis(redis.url);
    const judged = new Set<string>();
    let ticks = 0;
    const sampler = setInterval(() => {
      for (const w of s.workers()) {
        const m = treeMemory(w.pid);
        peak = Math.max(peak, m.measured);
        if (maxMemoryBytes !== undefined && m.measured > maxMemoryBytes)
          over.push({ at: Date.now(), measured: m.measured });
        peakRssSum = Math.max(peakRssSum, m.rssSum);
      }
      // What `status` shows as the worker's reason now: a hold is judged, not logged (only changes are).
      if (++ticks % 5 === 0)
        void readTaskScaling(watcher, name).then((sc) => {
          for (const w of sc.workers) if (w.autoscale?.now) judged.add(w.autoscale.now);
        });
    }, 100);
    try {
      const result = await s.run();
      const stored = new Set((await bufferedPages(redis.url, name)).map((p) => p.url)).size;
      const failed = result.status.stats!.failed;
      return { peak, over, peakRssSum, lines, judged: [...judged], failed, fetched: site.fetched, stored } as Crawl;
    } finally {
      clearInterval(sampler);
      watcher.disconnect();
      await s.close();
      await site.server.close();
    }
  }

  const report = (what: string, c: Crawl) =>
    console.log(
      `      ${what}: peak ${Math.round(c.peak / MB)} MB (RSS summed ${Math.round(c.peakRssSum / MB)} MB)\n${c.lines.filter((l) => /concurrency \d+ → |browser/.test(l)).join('\n')}\n${c.judged
        .filter((l) => /memory/.test(l))
        .slice(0, 3)
        .join('\n')}`,
    );

  /** Every page fetched once and stored, none failed. */
  const complete = (c: Crawl) => {
    assert.equal(c.failed, 0, c.lines.join('\n'));
    assert.equal(c.fetched.size, PAGES + 1, 'every page fetched');
    assert.equal(c.stored, PAGES + 1, 'every page stored');
  };
  /** A memory back-off logged, or a hold at the limit given as the reason. */
  const memoryDecision = (c: Crawl) =>
    [...c.lines, ...c.judged].filter((l) => /concurrency \d+ → \d+: memory|no growth: memory/.test(l));

  // Measured on a loaded 2-core machine (issue 36): the worker's tree peaked at 1,300-1,606 MB at a fixed 16 (its
  // browser's 4 open pages; more while a retired browser closes beside its successor), 1,086 MB at a fixed 2 and
  // 750-956 MB at 1. 1,200 MB is between: 16 cannot keep to it, auto can.
  const LIMIT = Number(process.env.MEM_TEST_LIMIT ?? 1_200) * MB;

  /**
   * The samples over the limit that the autoscaler answers for: those taken while the worker ran above its minimum,
   * other than during a back-off (the pages in flight at the level it left finish first). At its minimum a page's
   * own memory is the site's, not the worker's to limit: on a loaded machine one page at a time has peaked over
   * 1,200 MB (renderers of pages left still tearing down), and the README says the limit is kept by concurrency.
   */
  const overAboveMinimum = (c: Crawl, min: number) => {
    const changes = c.lines
      .map((l) => /^(\S+) info concurrency (\d+) → (\d+)/.exec(l))
      .filter((m): m is RegExpExecArray => m !== null)
      .map((m) => ({ at: Date.parse(m[1]!), from: Number(m[2]), to: Number(m[3]) }));
    return c.over.filter((o) => {
      const last = changes.filter((x) => x.at <= o.at).at(-1);
      if (!last || last.to <= min) return false;
      return !(last.to < last.from && o.at - last.at < BACK_OFF_MS);
    });
  };
  /** How long after a back-off the pages in flight at the level left may still hold their memory. */
  const BACK_OFF_MS = 10_000;

  it('with --concurrency 1..16 and --max-memory, every page is stored and the tree stays under the limit whenever the worker runs above its minimum', async () => {
    const c = await crawl({ kind: 'auto', min: 1, max: 16 }, LIMIT);
    report('auto 1..16', c);
    complete(c);
    const blamed = overAboveMinimum(c, 1);
    assert.deepEqual(
      blamed.map((o) => `${new Date(o.at).toISOString()} ${Math.round(o.measured / MB)} MB`),
      [],
      `over the ${LIMIT / MB} MB limit above the minimum concurrency (peak ${Math.round(c.peak / MB)} MB): ${c.lines.filter((l) => /concurrency/.test(l)).join('\n')}`,
    );
    if (c.peak > LIMIT)
      console.log(
        `      over the limit at concurrency 1 only (${c.over.length} samples, peak ${Math.round(c.peak / MB)} MB)`,
      );
    assert.ok(memoryDecision(c).length > 0, `a memory back-off or hold: ${[...c.lines, ...c.judged].join('\n')}`);
  });

  it('a fixed 16 on the same site goes over that limit (what the test above would catch)', async () => {
    const c = await crawl(16, LIMIT);
    report('fixed 16', c);
    complete(c);
    assert.ok(c.peak > LIMIT, `peak ${Math.round(c.peak / MB)} MB, expected over ${LIMIT / MB} MB`);
  });
});
