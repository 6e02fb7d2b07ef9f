#!/usr/bin/env node
// Crawl Studio's benchmark suite (issue 8). One run: fixture site -> nginx (ceiling checked with wrk) -> every
// crawler on the same site at the same concurrency, each checked for completeness -> micro-benchmarks ->
// bench/results/<date>.md (also printed). Timings are reported, never asserted.
//
//   node bench/run.mjs [--quick] [--concurrency 16] [--only limit,cs1,cs2,crawlee,crawlee-np,scrapy,scale,slow,broad,browser,autoscale,micro]
//                      [--lists 100] [--profile] [--keep] [--broad cs1,cs2,scrapy,crawlee] [--browser-concurrency 4] [--browser-rows cs1,crawlee] [--chromium PATH] [--out FILE]
//
// --quick: a ~550-page site, 200k URLs for dedup, 20k items for the stores (a sanity run in about a minute).
// --profile: also runs Crawl Studio (1 worker) once more with --cpu-prof and Redis MONITOR, and adds where its
//            time goes and which Redis commands each page costs.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { breakdown } from './lib/breakdown.mjs';
import { summariseProfile } from './lib/profile.mjs';
import { startMonitor } from './lib/monitor.mjs';
import { startSlowlog } from './lib/slowlog.mjs';
import { cpuOf, killRunning, procStat, rmrf, runMeasured, settle } from './lib/procs.mjs';
import {
  commandCalls,
  commandUsec,
  redisInfo,
  startNginx,
  startPostgres,
  startRedis,
  startRedisCluster,
  startSlowProxy,
} from './lib/services.mjs';
import { benchTask } from './lib/task.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const { values: flags } = parseArgs({
  options: {
    quick: { type: 'boolean' },
    concurrency: { type: 'string' },
    only: { type: 'string' },
    profile: { type: 'boolean' },
    keep: { type: 'boolean' },
    out: { type: 'string' },
    build: { type: 'string' },
    against: { type: 'string' },
    repeat: { type: 'string' },
    // The broad-crawl row's crawlers (default all): --broad cs1,cs2,scrapy,crawlee
    broad: { type: 'string' },
    // The broad-crawl row's shape, HOSTSxPAGES@DELAY (seconds): --broad-shape 500x8@2 (default 200x20@1, 50x20@1
    // with --quick); issue 36's shapes are 500x8@2, 1000x5@4 and 500x8@1.
    'broad-shape': { type: 'string' },
    // The browser row (issue 18): pages in flight in each crawler's browser (default 4), and the Chromium to use.
    'browser-concurrency': { type: 'string' },
    // The browser row's crawlers (default both): --browser-rows cs1,crawlee
    'browser-rows': { type: 'string' },
    chromium: { type: 'string' },
    // The autoscaling row's fixed settings, WORKERSxCONCURRENCY (issue 36): --autoscale-fixed 1x16,2x8,1x32,2x16
    'autoscale-fixed': { type: 'string' },
    // The standard site's list pages (default 100, 25 with --quick): 22 pages each, so --lists 455 is ~10,000 pages
    // (issue 36's acceptance at 10,000 pages).
    lists: { type: 'string' },
  },
});
const quick = flags.quick ?? false;
const C = Number(flags.concurrency ?? 16);
const only = flags.only ? new Set(flags.only.split(',')) : null;
const want = (k) => !only || only.has(k);
const SITE = { list: Number(flags.lists ?? (quick ? 25 : 100)), per: 20, filler: 22 };
// The linearity check's site: the same kind of pages, ~50,000 of them (~5,500 with --quick).
const SCALE_LIST = quick ? 250 : 2270;
// The latency-bound rows: every response this late, as from a distant site.
const SLOW_MS = 100;
const DEDUP_URLS = quick ? 200_000 : 1_000_000;
const STORE_ITEMS = quick ? 20_000 : 100_000;
const tmp = join(here, 'results', 'tmp', `run-${Date.now().toString(36)}`);
mkdirSync(tmp, { recursive: true });
const build = flags.build ? resolve(flags.build) : join(here, '.build');
// --against DIR: a second build (bench/build.mjs --src COPY --out DIR) whose Crawl Studio row `cs1-b` runs in every
// round right after `cs1`, on the same site and nginx: an A/B of a change that a day's spread between runs would hide.
const against = flags.against ? resolve(flags.against) : null;
// The limit and Crawl Studio rows decide the headline ratio: each runs this many times, interleaved, best kept.
const REPEAT = Number(flags.repeat ?? (quick ? 1 : 2));
// The broad-crawl rows run this many rounds (every crawler in each), every run reported.
const BROAD_RUNS = Number(flags.repeat ?? 2);
const log = (...a) => console.error(`[bench ${new Date().toISOString().slice(11, 19)}]`, ...a);

const services = [];
async function stopAll() {
  killRunning();
  while (services.length)
    await services
      .pop()
      .stop()
      .catch(() => undefined);
}
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => void stopAll().finally(() => process.exit(130)));

/** Machine-wide busy CPU seconds from /proc/stat (all cores). */
function machineBusy() {
  const f = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  const idle = f[3] + f[4];
  return (f.slice(0, 8).reduce((a, b) => a + b, 0) - idle) / 100;
}

/** Canonical form of a logged request URI, as every crawler is told to canonicalise (drop ref/src, sort query). */
function canonicalUri(uri) {
  const u = new URL(uri, 'http://x');
  const q = [...u.searchParams]
    .filter(([k]) => k !== 'ref' && k !== 'src')
    .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  return u.pathname + (q.length ? `?${new URLSearchParams(q)}` : '');
}

function completeness(requests, expected) {
  const pages = requests.filter((r) => r.uri !== '/robots.txt');
  const counts = new Map();
  for (const r of pages) {
    const c = canonicalUri(r.uri);
    counts.set(c, (counts.get(c) ?? 0) + 1);
  }
  const want = new Set(expected.pages);
  const missing = expected.pages.filter((p) => !counts.has(p));
  const twice = [...counts].filter(([, n]) => n > 1).map(([p]) => p);
  const unexpected = [...counts.keys()].filter((p) => !want.has(p));
  const disallowed = [...counts.keys()].filter((p) => expected.disallowed.includes(p));
  const errors = pages.filter((r) => r.status >= 400).length;
  const times = pages.map((r) => r.t);
  const windowS = times.length > 1 ? Math.max(...times) - Math.min(...times) : 0;
  return {
    fetched: pages.length,
    distinct: counts.size,
    missing: missing.length,
    twice: twice.length,
    unexpected: unexpected.length,
    disallowed: disallowed.length,
    errors,
    robotsFetches: requests.length - pages.length,
    windowS,
    ok: missing.length === 0 && twice.length === 0 && unexpected.length === 0 && errors === 0,
    examples: [
      ...missing.slice(0, 3).map((p) => `missing ${p}`),
      ...twice.slice(0, 3).map((p) => `twice ${p}`),
      ...unexpected.slice(0, 3).map((p) => `unexpected ${p}`),
    ],
  };
}

/** What a child that printed no result said: how it ended, and the start and end of its stderr. */
function failure(r) {
  const how = r.error ? r.error.message : r.signal ? `killed by ${r.signal}` : `exit ${r.status}`;
  const err = (r.stderr ?? '').trim();
  return `${how}: ${err.length > 800 ? `${err.slice(0, 300)} … ${err.slice(-400)}` : err || '(no stderr)'}`;
}

function lastJson(output) {
  const line = output
    .trim()
    .split('\n')
    .reverse()
    .find((l) => l.startsWith('{"result"'));
  return line ? JSON.parse(line).result : null;
}

async function measureCrawler(def, ctx) {
  const { nginx, expected } = ctx;
  // def.dir: a folder of its own for each run of a row (a repeated run must not find the last one's Redis data).
  const dir = join(tmp, def.dir ?? def.key);
  mkdirSync(dir, { recursive: true });
  let redis = null;
  if (def.redis === 'cluster') {
    redis = await startRedisCluster({ dir: join(dir, 'redis') });
    services.push(redis);
  } else if (def.redis) {
    redis = await startRedis({ dir: join(dir, 'redis') });
    services.push(redis);
  }
  // Every redis-server process of the row: one, or a cluster's primaries.
  const redisPids = redis ? (redis.pids ?? [redis.pid]) : [];
  const prep = def.prepare ? def.prepare({ dir, redis, nginx }) : {};
  const mark = nginx.mark();
  // Requests logged before this crawler started (wrk's last in-flight ones are logged as they end) don't count.
  const since = Date.now() / 1000 - 0.01;
  const ngCpu0 = nginx.workerPids().reduce((a, p) => a + cpuOf(p), 0);
  const redisCpu0 = redisPids.reduce((a, p) => a + cpuOf(p), 0);
  const busy0 = machineBusy();
  const load0 = loadavg()[0];
  let redisPeakRss = 0;
  const res = await runMeasured(def.cmd, def.args({ dir, redis, nginx, ...prep }), {
    cwd: dir,
    env: def.env,
    cgroup: def.cgroup ?? false,
    pss: def.pss ?? false,
    ...(def.timeoutMs ? { timeoutMs: def.timeoutMs } : {}),
    // Often enough that the per-thread figures miss little of a process that exits (at most its last 0.1 s).
    sampleMs: 100,
    onSample: () => {
      if (redis)
        redisPeakRss = Math.max(
          redisPeakRss,
          redisPids.reduce((a, p) => a + (procStat(p)?.rss ?? 0), 0),
        );
    },
  });
  const busy = machineBusy() - busy0;
  const ngCpu = nginx.workerPids().reduce((a, p) => a + cpuOf(p), 0) - ngCpu0;
  const redisCpu = redisPids.reduce((a, p) => a + cpuOf(p), 0) - redisCpu0;
  let redisStats = null;
  if (redis?.nodes) {
    // A cluster: each primary's figures, and their sums.
    const perNode = [];
    for (const n of redis.nodes) {
      const info = await redisInfo(n.port);
      const calls = commandCalls(info);
      perNode.push({
        port: n.port,
        usedMemory: Number(info.used_memory),
        usedMemoryPeak: Number(info.used_memory_peak),
        commands: Object.values(calls).reduce((a, b) => a + b, 0),
        reads: Number(info.total_reads_processed),
        cpuS: cpuOf(n.pid),
      });
    }
    const sum = (k) => perNode.reduce((a, n) => a + n[k], 0);
    redisStats = {
      usedMemory: sum('usedMemory'),
      usedMemoryPeak: sum('usedMemoryPeak'),
      rssPeak: redisPeakRss,
      commands: sum('commands'),
      reads: sum('reads'),
      netIn: 0,
      netOut: 0,
      calls: {},
      keys: '',
      perNode,
    };
    await redis.stop();
    services.splice(services.indexOf(redis), 1);
  } else if (redis) {
    const info = await redisInfo(redis.port);
    const calls = commandCalls(info);
    redisStats = {
      usedMemory: Number(info.used_memory),
      usedMemoryPeak: Number(info.used_memory_peak),
      rssPeak: redisPeakRss,
      commands: Object.values(calls).reduce((a, b) => a + b, 0),
      reads: Number(info.total_reads_processed),
      // Bytes through Redis's sockets: on loopback the sender's write runs the receiver's TCP path too, so every
      // byte a client sends costs it CPU (socket writes were a third of the worker's main thread in a profile).
      netIn: Number(info.total_net_input_bytes),
      netOut: Number(info.total_net_output_bytes),
      calls,
      // Where Redis's own time goes, per command (issue 36's breakdown in bench/README.md).
      usec: commandUsec(info),
      keys: info.db0 ?? '',
    };
    await redis.stop();
    services.splice(services.indexOf(redis), 1);
  }
  // nginx writes its access log line as each response completes; give the last ones a moment.
  await new Promise((r) => setTimeout(r, 200));
  const requests = nginx.requests(mark).filter((r) => r.t >= since);
  const check = (ctx.check ?? completeness)(requests, expected, since);
  const out = def.parse(res.output, { dir });
  const pages = check.fetched;
  const cpu = (res.cpuS ?? 0) + redisCpu;
  const itemsOk = def.itemsOk(out, expected);
  const row = {
    key: def.key,
    name: def.name,
    code: res.code,
    wallS: res.wallS,
    pages,
    pagesPerSec: pages / res.wallS,
    windowPagesPerSec: check.windowS > 0 ? pages / check.windowS : null,
    treeCpuS: res.cpuS,
    redisCpuS: redisCpu,
    nginxCpuS: ngCpu,
    otherCpuS: Math.max(0, busy - cpu - ngCpu),
    load: [load0, loadavg()[0]],
    cpuPer1000: (cpu / pages) * 1000,
    peakRss: res.peakRss,
    peakPss: res.peakPss,
    reapedCpuS: res.reapedCpuS,
    cpuFrom: res.cpuFrom,
    redis: redisStats,
    check,
    items: out?.items ?? null,
    decisions: out?.decisions ?? null,
    itemsOk,
    complete: check.ok && itemsOk && res.code === 0,
    processes: res.processes,
    threads: res.threads,
    output: res.output.slice(-3000),
  };
  log(
    `${def.name}: ${pages} pages in ${res.wallS.toFixed(1)} s = ${row.pagesPerSec.toFixed(0)} pages/s, cpu ${cpu.toFixed(1)} s` +
      ` (${row.cpuPer1000.toFixed(2)} s/1000 pages), other load ${row.otherCpuS.toFixed(1)} cpu-s, complete=${row.complete}` +
      (row.complete ? '' : ` ${JSON.stringify(check.examples)} items=${JSON.stringify(out?.items)} code=${res.code}`),
  );
  if (res.code !== 0) log(res.output.slice(-2000));
  return row;
}

/**
 * The linearity target: Crawl Studio (1 worker) on a site ~23× the size, generated and served like the standard
 * one. Its pages/s against the standard site's cs1 row shows whether any per-page cost grows with the seen set,
 * the queue or the store.
 */
async function scaleRun(ctx) {
  const site = join(ctx.shm, 'site-scale');
  log(`scale: site of ${SCALE_LIST} list pages × ${SITE.per} books`);
  execFileSync(
    process.execPath,
    [
      join(build, 'sitegen.js'),
      '--out',
      site,
      '--list',
      String(SCALE_LIST),
      '--per',
      String(SITE.per),
      '--filler',
      String(SITE.filler),
    ],
    { stdio: ['ignore', 'ignore', 'inherit'] },
  );
  const expected = JSON.parse(readFileSync(join(site, 'expected.json'), 'utf8'));
  const nginx = await startNginx({ root: site, dir: join(ctx.shm, 'nginx-scale') });
  services.push(nginx);
  try {
    const sctx = { ...ctx, nginx, expected };
    const defs = crawlerDefs(sctx);
    const def = {
      ...defs.find((d) => d.key === 'cs1'),
      key: 'cs1-scale',
      name: `Crawl Studio, 1 worker × ${C}, ${fmt(expected.pages.length)}-page site`,
    };
    log(`crawler: ${def.name}`);
    await settle(); // after generating 50,000 pages onto tmpfs
    const row = await measureCrawler(def, sctx);
    // The same site through the faster no-queue loop: the ratio once start-up and the JIT's warm-up are spread thin.
    const ldef = {
      ...defs.find((d) => d.key === 'limit-pipeline'),
      key: 'limit-scale',
      name: `limit + Crawl Studio analysePage, ${fmt(expected.pages.length)}-page site`,
    };
    log(`crawler: ${ldef.name}`);
    await settle();
    const limitRow = await measureCrawler(ldef, sctx);
    return { row, limitRow, expected: { pages: expected.pages.length, items: expected.items } };
  } finally {
    await nginx.stop();
    services.splice(services.indexOf(nginx), 1);
    if (!flags.keep) rmrf(site);
  }
}

/**
 * The no-queue loop and Crawl Studio's two ways of holding C requests in flight, 1 worker × C and 2 × C/2, on the
 * standard site answering SLOW_MS late: where the network, not the CPU, sets the pace, what the queue and the store
 * cost against the loop, and what the default worker count (one per two cores) costs or saves.
 */
async function slowRun(ctx) {
  const proxy = await startSlowProxy(ctx.nginx, SLOW_MS);
  try {
    const sctx = { ...ctx, nginx: proxy };
    const rows = [];
    // The no-queue loop on the same slow site says how much of the network's pace the queue and the store keep.
    for (const def of crawlerDefs(sctx).filter(
      (d) => d.key === 'limit-pipeline' || d.key === 'cs1' || d.key === 'cs2',
    )) {
      const sdef = { ...def, key: `${def.key}-slow`, name: `${def.name}, ${SLOW_MS} ms a response` };
      log(`crawler: ${sdef.name}`);
      await settle();
      rows.push(await measureCrawler(sdef, sctx));
    }
    return rows;
  } finally {
    await proxy.stop();
  }
}

// The autoscaling row (issue 36): `--workers auto --concurrency auto` against fixed settings found by hand, every
// setting once in each round (interleaved), on the standard site. The task lets the one host take AUTOSCALE_HOST
// requests at once in every row, so politeness caps none of them and the settings alone differ.
const AUTOSCALE_FIXED = (flags['autoscale-fixed'] ?? '1x8,1x16,1x32,2x8,2x16')
  .split(',')
  .map((s) => s.split('x').map(Number));
const AUTOSCALE_HOST = 128;
// A decision line as the CLI prints a worker's or the run's: "concurrency 16 → 24: …", "workers 1 → 2: …".
const DECISION = /(concurrency|workers) (\d+) → (\d+): (.*)$/;

/**
 * Crawl Studio at each fixed setting (workers × concurrency) and with both autoscaled, REPEAT rounds interleaved:
 * pages/s and CPU per page of each, the median by setting, auto's ratio to the best fixed median and, round by round,
 * to that round's best fixed run; every scaling decision of the auto runs, with its reason.
 */
async function autoscaleRun(ctx) {
  const base = crawlerDefs(ctx).find((d) => d.key === 'cs1');
  const taskFile = (dir) => {
    const f = join(dir, 'bench.crawl.yaml');
    writeFileSync(f, benchTask({ base: ctx.nginx.url, concurrency: AUTOSCALE_HOST }));
    return f;
  };
  const def = (key, name, workers, concurrency) => ({
    ...base,
    key,
    name,
    prepare: ({ dir }) => ({ task: taskFile(dir) }),
    args: ({ redis, task }) => [
      join(build, 'cli.js'),
      'run',
      task,
      '--workers',
      workers,
      '--concurrency',
      concurrency,
      '--redis',
      redis.url,
      '--fresh',
    ],
    parse: (output, o) => ({
      ...csParse(output, o),
      decisions: output
        .split('\n')
        .map((l) => l.trim())
        .filter((l) => DECISION.test(l)),
    }),
  });
  const defs = [
    ...AUTOSCALE_FIXED.map(([w, c]) =>
      def(`as-${w}x${c}`, `${w} worker${w > 1 ? 's' : ''} × ${c}`, String(w), String(c)),
    ),
    def('as-auto', '--workers auto --concurrency auto', 'auto', 'auto'),
  ];
  const rows = [];
  for (let round = 0; round < REPEAT; round++) {
    // Each round in another order, so no setting always runs first after the machine settled.
    const order = defs.map((_, i) => defs[(i + round) % defs.length]);
    for (const d of order) {
      log(`autoscale: ${d.name} (round ${round + 1} of ${REPEAT})`);
      const busy = await settle();
      if (busy >= 0.1)
        log(`  the machine did not quiet down (${Math.round(busy * 100)}% busy): read this row's "other" column`);
      const row = await measureCrawler({ ...d, dir: `${d.key}-${round + 1}` }, ctx);
      rows.push({ ...row, round });
      for (const line of row.decisions ?? []) log(`  ${line}`);
    }
  }
  return { rows, keys: defs.map((d) => [d.key, d.name]), pages: ctx.expected.pages.length };
}

function median(xs) {
  const s = xs.filter((x) => x !== null && Number.isFinite(x)).sort((a, b) => a - b);
  if (!s.length) return null;
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** The autoscaling section: every setting's runs and medians, auto against the best fixed, auto's decisions. */
function autoscaleReport(a) {
  const L = [];
  const rounds = Math.max(...a.rows.map((r) => r.round)) + 1;
  L.push(
    `**Autoscaling** (issue 36) — ${fmt(a.pages)} pages of the standard site, Crawl Studio at fixed settings (workers × ` +
      `concurrency, \`run --workers W --concurrency C\`) and with \`--workers auto --concurrency auto\` (1..cores ` +
      `processes, 2..64 requests each, starting at 1 × 16), ${rounds} round(s), every setting once a round, the order ` +
      `rotated between rounds; the task allows the host ${AUTOSCALE_HOST} requests at once in every row. Median pages/s ` +
      `of each setting; only complete runs count.`,
  );
  L.push('');
  L.push(
    '| setting | pages/s by round | median pages/s | median CPU ms / page | peak RSS (median) | other CPU s | load avg |',
  );
  L.push('|---|---|---|---|---|---|---|');
  const stats = a.keys.map(([key, name]) => {
    const runs = a.rows.filter((r) => r.key === key).sort((x, y) => x.round - y.round);
    const ok = runs.filter((r) => r.complete);
    return {
      key,
      name,
      runs,
      rate: median(ok.map((r) => r.pagesPerSec)),
      cpu: median(ok.map((r) => r.cpuPer1000)),
      rss: median(ok.map((r) => r.peakRss)),
    };
  });
  for (const s of stats)
    L.push(
      `| ${s.name} | ${s.runs.map((r) => (r.complete ? fmt(r.pagesPerSec) : `**incomplete** (${r.code})`)).join(', ')} | **${fmt(s.rate)}** | ${fmt(s.cpu, 2)} | ${mb(s.rss)} | ${s.runs.map((r) => fmt(r.otherCpuS, 0)).join(', ')} | ${s.runs.map((r) => `${fmt(r.load[0], 1)}→${fmt(r.load[1], 1)}`).join(', ')} |`,
    );
  const auto = stats.find((s) => s.key === 'as-auto');
  const fixedStats = stats.filter((s) => s.key !== 'as-auto' && s.rate !== null);
  const best = fixedStats.reduce((x, s) => (!x || s.rate > x.rate ? s : x), null);
  L.push('');
  if (auto?.rate && best) {
    const perRound = [];
    for (let round = 0; round < rounds; round++) {
      const inRound = a.rows.filter((r) => r.round === round && r.complete);
      const ar = inRound.find((r) => r.key === 'as-auto');
      const br = inRound
        .filter((r) => r.key !== 'as-auto')
        .reduce((x, r) => (!x || r.pagesPerSec > x.pagesPerSec ? r : x), null);
      const bs = inRound.find((r) => r.key === best.key);
      if (ar && br)
        perRound.push({
          best: ar.pagesPerSec / br.pagesPerSec,
          bestName: br.name,
          sameBest: bs ? ar.pagesPerSec / bs.pagesPerSec : null,
        });
    }
    const ratio = auto.rate / best.rate;
    const sameMedian = median(perRound.map((p) => p.sameBest));
    L.push(
      `- Auto against the best fixed setting (${best.name}, median ${fmt(best.rate)} pages/s): median ${fmt(auto.rate)} pages/s, ` +
        `**${fmt(ratio * 100)}%** of it; round by round against ${best.name}: ${perRound.map((p) => fmt(p.sameBest * 100)).join(', ')}% (median ${fmt(sameMedian * 100)}%), ` +
        `against each round's fastest fixed run: ${perRound.map((p) => `${fmt(p.best * 100)}% (${p.bestName})`).join(', ')}. ` +
        `Within 5%: ${ratio >= 0.95 ? 'met' : '**not met**'}. CPU per page ${fmt(auto.cpu, 2)} against ${fmt(best.cpu, 2)} ms.`,
    );
  } else L.push('- Auto against the best fixed setting: no complete runs to compare.');
  L.push('');
  L.push('Scaling decisions of the auto runs, as the CLI printed them:');
  L.push('');
  for (const r of auto?.runs ?? []) {
    L.push(`- round ${r.round + 1} (${r.complete ? fmt(r.pagesPerSec) : 'incomplete'} pages/s, ${fmt(r.wallS, 1)} s):`);
    const lines = r.decisions ?? [];
    if (!lines.length) L.push('  - none: it stayed at 1 worker × 16');
    for (const l of lines) L.push(`  - \`${l.replace(/`/g, "'")}\``);
  }
  return L;
}

// The broad-crawl row (issue 19): BROAD_HOSTS hosts on loopback (127.0.0.2 …), BROAD_PAGES pages each, every host
// allowed one request every BROAD_DELAY_S (--broad-shape). The ideal is BROAD_HOSTS / BROAD_DELAY_S pages/s; no
// crawler may take two requests of a host less than the delay apart.
const BROAD_SHAPE = /^(\d+)x(\d+)@([\d.]+)$/.exec(flags['broad-shape'] ?? (quick ? '50x20@1' : '200x20@1'));
if (!BROAD_SHAPE) throw new Error(`--broad-shape: '${flags['broad-shape']}' is not HOSTSxPAGES@DELAY (e.g. 500x8@2)`);
const BROAD_HOSTS = Number(BROAD_SHAPE[1]);
const BROAD_PAGES = Number(BROAD_SHAPE[2]);
const BROAD_DELAY_S = Number(BROAD_SHAPE[3]);
if (BROAD_HOSTS < 1 || BROAD_HOSTS > 60_000 || BROAD_PAGES < 2 || !(BROAD_DELAY_S > 0))
  throw new Error(`--broad-shape ${flags['broad-shape']}: 1-60,000 hosts, at least 2 pages each, a delay over 0`);
/** The i-th host's loopback address (127.0.0.2, …, 127.0.1.0, …): all of 127/8 answers on Linux. */
const broadHost = (i) => `127.0.${Math.floor((i + 2) / 256)}.${(i + 2) % 256}`;
// A run that would take longer than this is stopped: its pages/s so far is still its rate.
const BROAD_TIMEOUT_MS = 150_000;

/** Every host's site: "/" links to its BROAD_PAGES - 1 other pages; each of those links back to "/" and on to the next. */
function writeBroadSite(root, hosts) {
  for (const [i, h] of hosts.entries()) {
    const d = join(root, h);
    mkdirSync(d, { recursive: true });
    const page = (title, links) =>
      `<!doctype html><html><head><title>${title}</title></head><body><h1>${title}</h1>${links.map((l) => `<a href="${l}">${l}</a> `).join('')}</body></html>\n`;
    writeFileSync(join(d, 'robots.txt'), 'User-agent: *\nDisallow: /private/\n');
    writeFileSync(
      join(d, 'index.html'),
      page(
        `host ${i + 1} start`,
        Array.from({ length: BROAD_PAGES - 1 }, (_, k) => `/p${k + 1}.html`),
      ),
    );
    for (let k = 1; k < BROAD_PAGES; k++)
      writeFileSync(
        join(d, `p${k}.html`),
        page(`host ${i + 1} page ${k}`, ['/', `/p${(k % (BROAD_PAGES - 1)) + 1}.html`]),
      );
  }
  return { hosts, paths: ['/', ...Array.from({ length: BROAD_PAGES - 1 }, (_, k) => `/p${k + 1}.html`)] };
}

/**
 * The broad crawl's check, from nginx's log (each line carries the host's address): every page of every host
 * fetched once, and politeness per host: a violation is two page requests of one host less than the delay apart
 * ($msec, logged as each response ends; the pages are tiny static files, so that is within a millisecond of the
 * request's arrival). robots.txt fetches are counted apart.
 */
function broadCompleteness(requests, expected, since) {
  const pages = requests.filter((r) => r.uri !== '/robots.txt');
  const robots = requests.filter((r) => r.uri === '/robots.txt');
  const want = new Set(expected.hosts.flatMap((h) => expected.paths.map((p) => `${h}${p}`)));
  const counts = new Map();
  const byHost = new Map();
  for (const r of pages) {
    const k = `${r.host}${r.uri}`;
    counts.set(k, (counts.get(k) ?? 0) + 1);
    (byHost.get(r.host) ?? byHost.set(r.host, []).get(r.host)).push(r.t);
  }
  const missing = [...want].filter((k) => !counts.has(k));
  const twice = [...counts].filter(([, n]) => n > 1).map(([k]) => k);
  const unexpected = [...counts.keys()].filter((k) => !want.has(k));
  let violations = 0;
  // Gaps short by more than 50 ms: not the jitter between a request's admission and its arrival at nginx.
  let violationsBy50ms = 0;
  let minGap = Infinity;
  const hostsViolating = new Set();
  const spans = [];
  const gaps = [];
  const hostStarts = [];
  for (const [h, ts] of byHost) {
    ts.sort((a, b) => a - b);
    spans.push(ts[ts.length - 1] - ts[0]);
    hostStarts.push(ts[0]);
    for (let i = 1; i < ts.length; i++) {
      const gap = ts[i] - ts[i - 1];
      gaps.push(gap);
      minGap = Math.min(minGap, gap);
      // $msec has millisecond resolution: a gap of 0.999 s is under the delay.
      if (gap < BROAD_DELAY_S - 0.0005) (violations++, hostsViolating.add(h));
      if (gap < BROAD_DELAY_S - 0.05) violationsBy50ms++;
    }
  }
  spans.sort((a, b) => a - b);
  gaps.sort((a, b) => a - b);
  hostStarts.sort((a, b) => a - b);
  const q = (xs, f) => (xs.length ? xs[Math.min(xs.length - 1, Math.floor(xs.length * f))] : null);
  const times = pages.map((r) => r.t);
  const first = times.length ? Math.min(...times) : NaN;
  const last = times.length ? Math.max(...times) : NaN;
  const robotsByHost = new Map();
  for (const r of robots) robotsByHost.set(r.host, (robotsByHost.get(r.host) ?? 0) + 1);
  return {
    fetched: pages.length,
    distinct: counts.size,
    missing: missing.length,
    twice: twice.length,
    unexpected: unexpected.length,
    disallowed: 0,
    errors: pages.filter((r) => r.status >= 400).length,
    robotsFetches: robots.length,
    robotsHosts: robotsByHost.size,
    windowS: times.length > 1 ? last - first : 0,
    firstPageS: first - since,
    lastPageS: last - since,
    violations,
    violationsBy50ms,
    hostsViolating: hostsViolating.size,
    minGapS: minGap === Infinity ? null : minGap,
    medianHostSpanS: spans.length ? spans[Math.floor(spans.length / 2)] : null,
    maxHostSpanS: spans.length ? spans[spans.length - 1] : null,
    hostsSeen: byHost.size,
    // Where the time beyond the ideal goes: gaps between a host's requests over the delay (late starts add up along
    // a host's pages), and how long after the first host the others got their first page.
    gapP50S: q(gaps, 0.5),
    gapP90S: q(gaps, 0.9),
    gapP99S: q(gaps, 0.99),
    gapMaxS: gaps.length ? gaps[gaps.length - 1] : null,
    gapMeanS: gaps.length ? gaps.reduce((a, b) => a + b, 0) / gaps.length : null,
    hostStartP50S: hostStarts.length ? q(hostStarts, 0.5) - hostStarts[0] : null,
    hostStartMaxS: hostStarts.length ? hostStarts[hostStarts.length - 1] - hostStarts[0] : null,
    ok: missing.length === 0 && twice.length === 0 && unexpected.length === 0 && pages.every((r) => r.status < 400),
    examples: [
      ...missing.slice(0, 3).map((p) => `missing ${p}`),
      ...twice.slice(0, 3).map((p) => `twice ${p}`),
      ...unexpected.slice(0, 3).map((p) => `unexpected ${p}`),
    ],
  };
}

/**
 * The broad-crawl row: Crawl Studio (1 worker × C, 2 workers × C/2), Scrapy with its broad-crawl scheduler queue and
 * Crawlee with its per-domain delay, at the same concurrency, each run BROAD_RUNS times, interleaved.
 */
async function broadRun(ctx) {
  const root = join(ctx.shm, 'site-broad');
  const hosts = Array.from({ length: BROAD_HOSTS }, (_, i) => broadHost(i));
  const expected = writeBroadSite(root, hosts);
  const nginx = await startNginx({ root, dir: join(ctx.shm, 'nginx-broad'), hosts });
  services.push(nginx);
  const starts = nginx.urls.map((u) => `${u}/`);
  const bctx = { ...ctx, nginx, expected, check: broadCompleteness };
  const total = BROAD_HOSTS * BROAD_PAGES;
  const task = (dir) => {
    const f = join(dir, 'broad.crawl.yaml');
    writeFileSync(
      f,
      `# Generated by bench/run.mjs: the broad-crawl row (issue 19).
name: broad
start:
${starts.map((u) => `  - ${u}`).join('\n')}
politeness:
  perHost: { concurrency: 1, delay: ${BROAD_DELAY_S}s }
rules:
  - name: page
    match: ["**"]
    follow:
      - { selector: a, to: page }
    items:
      - type: page
        key: [title]
        fields:
          title: h1
`,
    );
    return f;
  };
  const startsFile = (dir) => {
    const f = join(dir, 'starts.txt');
    writeFileSync(f, `${starts.join('\n')}\n`);
    return f;
  };
  const cs = (workers, cluster = false) => ({
    key: `broad-cs${workers}${cluster ? 'c' : ''}`,
    name: `Crawl Studio, ${workers} worker${workers > 1 ? 's' : ''} × ${C / workers}${cluster ? ', 3-primary Redis Cluster' : ''}`,
    redis: cluster ? 'cluster' : true,
    cmd: process.execPath,
    timeoutMs: BROAD_TIMEOUT_MS,
    env: { CRAWL_STUDIO_CODE_CACHE: join(build, '.code-cache') },
    prepare: ({ dir }) => ({ task: task(dir) }),
    args: ({ redis, task: t }) => [
      join(build, 'cli.js'),
      'run',
      t,
      '--workers',
      String(workers),
      '--concurrency',
      String(C / workers),
      '--redis',
      redis.url,
      '--fresh',
    ],
    parse: csParse,
    itemsOk: (out) => out.items.page === total,
  });
  const defs = [
    cs(1),
    cs(2),
    // Issue 19: the same crawl on a local 3-primary cluster (the task split into one partition per primary).
    cs(1, true),
    cs(2, true),
    {
      key: 'broad-scrapy',
      name: `Scrapy ${ctx.scrapyVersion ?? ''}, DownloaderAwarePriorityQueue, ${C} requests, 1 per domain, DOWNLOAD_DELAY 1`.replace(
        '  ',
        ' ',
      ),
      skip: ctx.scrapyVersion ? null : 'python3-scrapy is not installed',
      cmd: '/usr/bin/python3',
      timeoutMs: BROAD_TIMEOUT_MS,
      prepare: ({ dir }) => ({ starts: startsFile(dir) }),
      args: ({ starts: f }) => [join(here, 'crawlers', 'scrapy_broad.py'), f, String(C)],
      parse: lastJson,
      itemsOk: (out) => out?.items === total,
    },
    {
      key: 'broad-crawlee',
      name: `Crawlee CheerioCrawler, sameDomainDelaySecs 1, maxConcurrency ${C}`,
      cmd: process.execPath,
      timeoutMs: BROAD_TIMEOUT_MS,
      prepare: ({ dir }) => ({ starts: startsFile(dir) }),
      args: ({ starts: f }) => [join(here, 'crawlers', 'crawlee_broad.mjs'), '--starts', f, '--concurrency', String(C)],
      parse: lastJson,
      itemsOk: (out) => out?.items === total,
    },
  ];
  const rows = [];
  const pick = flags.broad ? new Set(flags.broad.split(',').map((k) => `broad-${k}`)) : null;
  try {
    for (let round = 0; round < BROAD_RUNS; round++) {
      for (const def of defs.filter((d) => !pick || pick.has(d.key))) {
        if (def.skip) {
          if (round === 0) rows.push({ key: def.key, name: def.name, skipped: def.skip });
          continue;
        }
        log(`broad: ${def.name} (run ${round + 1} of ${BROAD_RUNS})`);
        const busy = await settle();
        if (busy >= 0.1)
          log(`  the machine did not quiet down (${Math.round(busy * 100)}% busy): read this row's "other" column`);
        // Each run in a folder of its own: a fresh Redis (no robots.txt cached by the last run), a fresh Crawlee storage.
        const row = await measureCrawler({ ...def, dir: `${def.key}-${round + 1}` }, bctx);
        const c = row.check;
        log(
          `  first page ${fmt(c.firstPageS, 2)} s, fetch window ${fmt(c.windowS, 1)} s, ${fmt(row.pagesPerSec, 1)} pages/s = ${fmt((row.pagesPerSec / (BROAD_HOSTS / BROAD_DELAY_S)) * 100, 1)}% of ${fmt(BROAD_HOSTS / BROAD_DELAY_S)}, ` +
            `gaps p50/p90/p99/max ${fmt(c.gapP50S, 3)}/${fmt(c.gapP90S, 3)}/${fmt(c.gapP99S, 3)}/${fmt(c.gapMaxS, 3)} s (mean ${fmt(c.gapMeanS, 3)}), ` +
            `hosts' first pages within ${fmt(c.hostStartP50S, 2)} s (median) / ${fmt(c.hostStartMaxS, 2)} s (last), ` +
            `violations ${c.violations} (${c.violationsBy50ms} by > 50 ms; ${c.hostsViolating} hosts, min gap ${fmt(c.minGapS, 3)} s), robots ${c.robotsFetches}`,
        );
        rows.push({ ...row, round });
      }
    }
  } finally {
    await nginx.stop();
    services.splice(services.indexOf(nginx), 1);
    if (!flags.keep) rmrf(root);
  }
  return {
    rows,
    hosts: BROAD_HOSTS,
    pagesPerHost: BROAD_PAGES,
    delayS: BROAD_DELAY_S,
    timeoutS: BROAD_TIMEOUT_MS / 1000,
  };
}

// The browser row (issue 18): the standard site's pages built by their scripts (sitegen --scripted), a smaller site
// (a browser renders pages tens of times slower than a fetch parses them), every page rendered by each crawler.
const BROWSER_SITE = quick ? { list: 8, per: 20, filler: 22 } : { list: 25, per: 20, filler: 22 };
const BROWSER_C = Number(flags['browser-concurrency'] ?? 4);
const CHROMIUM = flags.chromium ?? '/usr/bin/chromium';

/**
 * Crawl Studio (1 worker, every rule `browser`) and Crawlee's PlaywrightCrawler on the scripted site, the same
 * Chromium, the same number of pages in flight, REPEAT rounds interleaved: pages/s, CPU per page (the whole tree,
 * Chromium's processes included, counted in a cgroup where the machine has one), peak memory (RSS and PSS).
 */
async function browserRun(ctx) {
  const site = join(ctx.shm, 'site-browser');
  log(
    `browser: scripted site of ${BROWSER_SITE.list} list pages × ${BROWSER_SITE.per} books, ${BROWSER_C} pages in flight, ${CHROMIUM}`,
  );
  execFileSync(
    process.execPath,
    [
      join(build, 'sitegen.js'),
      '--out',
      site,
      '--scripted',
      '--list',
      String(BROWSER_SITE.list),
      '--per',
      String(BROWSER_SITE.per),
      '--filler',
      String(BROWSER_SITE.filler),
    ],
    { stdio: ['ignore', 'ignore', 'inherit'] },
  );
  const expected = JSON.parse(readFileSync(join(site, 'expected.json'), 'utf8'));
  const nginx = await startNginx({ root: site, dir: join(ctx.shm, 'nginx-browser') });
  services.push(nginx);
  const start = `${nginx.url}/`;
  // A browser asks for /favicon.ico by itself (Chromium does, Crawlee's and Crawl Studio's alike): not a page of the
  // crawl, so left out of completeness and counted apart.
  const check = (requests, e) => ({
    ...completeness(
      requests.filter((r) => r.uri !== '/favicon.ico'),
      e,
    ),
    favicons: requests.filter((r) => r.uri === '/favicon.ico').length,
  });
  const bctx = { ...ctx, nginx, expected, check };
  const chromiumVersion = (spawnSync(CHROMIUM, ['--version'], { encoding: 'utf8' }).stdout.match(/[\d.]{6,}/) ?? [
    '?',
  ])[0];
  const crawleeVersion = JSON.parse(
    readFileSync(join(here, 'node_modules', 'crawlee', 'package.json'), 'utf8'),
  ).version;
  const playwrightVersion = JSON.parse(
    readFileSync(resolve(here, '..', 'node_modules', 'playwright-core', 'package.json'), 'utf8'),
  ).version;
  const extractedOk = (out, e) =>
    out && out.items && out.items.book === e.extracted.book && out.items.listing === e.extracted.listing;
  const defs = [
    {
      key: 'browser-cs1',
      name: `Crawl Studio, 1 worker, ${BROWSER_C} pages in flight`,
      redis: true,
      cgroup: true,
      pss: true,
      cmd: process.execPath,
      env: { CRAWL_STUDIO_CODE_CACHE: join(build, '.code-cache') },
      prepare: ({ dir }) => {
        const f = join(dir, 'bench.crawl.yaml');
        writeFileSync(f, benchTask({ base: nginx.url, concurrency: BROWSER_C, browser: true }));
        return { task: f };
      },
      args: ({ redis, task }) => [
        join(build, 'cli.js'),
        'run',
        task,
        '--workers',
        '1',
        '--concurrency',
        String(BROWSER_C),
        '--redis',
        redis.url,
        '--fresh',
        '--browser',
        CHROMIUM,
      ],
      parse: csParse,
      itemsOk: (out, e) =>
        out.items.book === e.items.book &&
        out.items.listing === e.items.listing &&
        out.extracted === e.extracted.book + e.extracted.listing,
    },
    {
      key: 'browser-crawlee',
      name: `Crawlee ${crawleeVersion} PlaywrightCrawler, ${BROWSER_C} pages in flight`,
      cgroup: true,
      pss: true,
      cmd: process.execPath,
      args: () => [
        join(here, 'crawlers', 'crawlee_browser.mjs'),
        '--start',
        start,
        '--concurrency',
        String(BROWSER_C),
        '--executable',
        CHROMIUM,
      ],
      parse: lastJson,
      itemsOk: extractedOk,
    },
  ];
  const rows = [];
  const pick = flags['browser-rows'] ? new Set(flags['browser-rows'].split(',').map((k) => `browser-${k}`)) : null;
  try {
    for (let round = 0; round < REPEAT; round++) {
      for (const def of defs.filter((d) => !pick || pick.has(d.key))) {
        log(`browser: ${def.name} (run ${round + 1} of ${REPEAT})`);
        const busy = await settle();
        if (busy >= 0.1)
          log(`  the machine did not quiet down (${Math.round(busy * 100)}% busy): read this row's "other" column`);
        const row = await measureCrawler({ ...def, dir: `${def.key}-${round + 1}` }, bctx);
        log(
          `  peak RSS ${mb(row.peakRss)}, PSS ${mb(row.peakPss)}; CPU ${fmt(row.treeCpuS, 1)} s (${row.cpuFrom}; reaped tree ${fmt(row.reapedCpuS, 1)} s)`,
        );
        rows.push({ ...row, round });
      }
    }
  } finally {
    await nginx.stop();
    services.splice(services.indexOf(nginx), 1);
    if (!flags.keep) rmrf(site);
  }
  return {
    rows,
    site: BROWSER_SITE,
    pages: expected.pages.length,
    concurrency: BROWSER_C,
    chromium: `${CHROMIUM} ${chromiumVersion}`,
    playwright: playwrightVersion,
    crawlee: crawleeVersion,
    htmlBytes: expected.htmlBytes,
  };
}

/** The browser section of the report: every run, the best of each crawler, and the target. */
function browserReport(b) {
  const L = [];
  L.push(
    `**Pages that need a browser** (issue 18) — the standard site's pages built by their scripts (\`sitegen --scripted\`: the body is a script that writes the page ` +
      `into \`#app\` once the document is parsed, then marks it ready; links and items exist only in the rendered DOM), ${fmt(b.site.list)} list pages × ${b.site.per} books, ` +
      `${fmt(b.pages)} pages, HTML ${fmt(b.htmlBytes.min / 1024, 1)}–${fmt(b.htmlBytes.max / 1024, 1)} KB. Every page rendered in ${b.chromium} (Debian's, no download), ` +
      `driven by playwright-core ${b.playwright} in both crawlers, **${b.concurrency} pages in flight** in each, images, fonts and media blocked, robots.txt obeyed, ` +
      `each page read once \`#app.ready\` is in it. Crawl Studio: \`run --workers 1 --concurrency ${b.concurrency} --browser ${b.chromium.split(' ')[0]}\` with ` +
      `\`browser: { waitFor: { selector: "#app.ready" } }\` on the bench task (defaults otherwise: a context per page, the egress proxy that guards every request, ` +
      `items into SQLite). Crawlee ${b.crawlee}: PlaywrightCrawler, defaults (fingerprints, one browser context shared by its pages) but for the concurrency, ` +
      `in-memory storage and \`blockRequests()\`. CPU = the whole process tree, Chromium's processes included (counted in a cgroup of each run's own where the ` +
      `machine has one), plus Redis for Crawl Studio; peak RSS sums the tree's processes (pages Chromium's processes share counted once each), PSS shares them out.`,
  );
  L.push('');
  L.push(
    '| crawler | run | complete | pages | wall s | pages/s | pages/s (fetch window) | CPU ms / page | peak RSS | peak PSS | favicon requests | other CPU s |',
  );
  L.push('|---|---|---|---|---|---|---|---|---|---|---|---|');
  for (const r of b.rows) {
    L.push(
      `| ${r.name} | ${r.round + 1} | ${r.complete ? 'yes' : `**no** (${[r.check.ok ? '' : `missing ${r.check.missing}, twice ${r.check.twice}, unexpected ${r.check.unexpected}, errors ${r.check.errors}`, r.itemsOk ? '' : `items ${JSON.stringify(r.items)}`].filter(Boolean).join('; ')})`} ` +
        `| ${fmt(r.pages)} | ${fmt(r.wallS, 1)} | **${fmt(r.pagesPerSec, 1)}** | ${fmt(r.windowPagesPerSec, 1)} | ${fmt(r.cpuPer1000, 1)} | ${mb(r.peakRss)} | ${mb(r.peakPss)} | ${fmt(r.check.favicons)} | ${fmt(r.otherCpuS, 1)} |`,
    );
  }
  const best = (key) =>
    b.rows
      .filter((r) => r.key === key && r.complete)
      .reduce((a, r) => (!a || r.pagesPerSec > a.pagesPerSec ? r : a), null);
  const cs = best('browser-cs1');
  const cr = best('browser-crawlee');
  L.push('');
  if (cs && cr) {
    L.push(
      `- At least as fast as Crawlee's PlaywrightCrawler (best runs): ${fmt(cs.pagesPerSec, 1)} against ${fmt(cr.pagesPerSec, 1)} pages/s, ` +
        `${fmt((cs.pagesPerSec / cr.pagesPerSec) * 100)}% — ${cs.pagesPerSec >= cr.pagesPerSec ? 'met' : '**not met**'}; CPU per page ${fmt(cs.cpuPer1000, 1)} against ` +
        `${fmt(cr.cpuPer1000, 1)} ms (${fmt(cs.cpuPer1000 / cr.cpuPer1000, 2)}×); peak PSS ${mb(cs.peakPss)} against ${mb(cr.peakPss)}.`,
    );
  } else
    L.push(
      `- At least as fast as Crawlee's PlaywrightCrawler: no complete run of ${cs ? 'Crawlee' : 'Crawl Studio'} to compare.`,
    );
  return L;
}

/** What a crawler row's process is, from its command line; null for the wrappers around it. */
function processKind(cmd) {
  return cmd.includes('worker.js')
    ? 'worker'
    : cmd.includes('cli.js')
      ? 'CLI (coordinator + writer)'
      : cmd.includes('limit.js')
        ? 'crawler'
        : null;
}

/** A crawler row's CPU by process kind and thread (seconds): main thread, the worker's analysis thread, the rest. */
function threadBreakdown(row) {
  const kinds = new Map();
  for (const p of row.processes ?? []) {
    const label = processKind(p.cmd);
    if (!label) continue;
    const threads = row.threads.filter((t) => t.pid === p.pid);
    const others = threads.filter((t) => t.tid !== p.pid).sort((a, b) => b.cpu - a.cpu);
    const analysis = label === 'worker' ? (others.shift()?.cpu ?? 0) : null;
    const k = kinds.get(label) ?? { label, main: 0, analysis: analysis === null ? null : 0, helpers: 0 };
    k.main += threads.find((t) => t.tid === p.pid)?.cpu ?? 0;
    if (analysis !== null) k.analysis += analysis;
    k.helpers += others.reduce((a, t) => a + t.cpu, 0);
    kinds.set(label, k);
  }
  return [...kinds.values()].map((k, i) => ({ ...k, first: i === 0 }));
}

/** The large site's Crawl Studio row against the standard site's: ratios of pages/s (wall, fetch window) and CPU per page. */
function linearity(large, small) {
  if (!large || !small || !small.complete) return null;
  const wall = large.pagesPerSec / small.pagesPerSec;
  const window =
    large.windowPagesPerSec && small.windowPagesPerSec ? large.windowPagesPerSec / small.windowPagesPerSec : null;
  const met = large.complete && wall >= 0.9 && (window === null || window >= 0.9);
  return { large, small, wall, window: window ?? NaN, cpu: large.cpuPer1000 / small.cpuPer1000, met };
}

function csParse(output, { dir }) {
  const stored = /items stored\s+(.*) rows/.exec(output)?.[1] ?? '';
  const items = {};
  for (const m of stored.matchAll(/(\w+): ([\d,]+)/g)) items[m[1]] = Number(m[2].replace(/,/g, ''));
  const extracted = Number((/items extracted\s+([\d,]+)/.exec(output)?.[1] ?? '0').replace(/,/g, ''));
  const dupLinks = Number((/duplicate links\s+([\d,]+)/.exec(output)?.[1] ?? '0').replace(/,/g, ''));
  const finished = Number(/finished in ([\d.]+) s/.exec(output)?.[1] ?? NaN);
  void dir;
  return { items, extracted, dupLinks, finishedS: finished };
}

function crawlerDefs(ctx) {
  const start = `${ctx.nginx.url}/`;
  const taskFile = (dir) => {
    const f = join(dir, 'bench.crawl.yaml');
    writeFileSync(f, benchTask({ base: ctx.nginx.url, concurrency: C }));
    return f;
  };
  const extractedOk = (out, e) =>
    out && out.items && out.items.book === e.extracted.book && out.items.listing === e.extracted.listing;
  const cs = (workers, from = build, suffix = '') => ({
    key: `cs${workers}${suffix}`,
    name: `Crawl Studio, ${workers} worker${workers > 1 ? 's' : ''} × ${C / workers}${suffix ? ` (${from})` : ''}`,
    redis: true,
    cmd: process.execPath,
    // Each build keeps its code cache apart: the programs delete caches of other builds, so two builds sharing one
    // folder would each start from a cold compile in every round.
    env: { CRAWL_STUDIO_CODE_CACHE: join(from, '.code-cache') },
    prepare: ({ dir }) => ({ task: taskFile(dir) }),
    args: ({ redis, task }) => [
      join(from, 'cli.js'),
      'run',
      task,
      '--workers',
      String(workers),
      '--concurrency',
      String(C / workers),
      '--redis',
      redis.url,
      '--fresh',
    ],
    parse: csParse,
    // Stored rows after the store's dedup: one per book and one per listing; everything extracted was counted.
    itemsOk: (out, e) =>
      out.items.book === e.items.book &&
      out.items.listing === e.items.listing &&
      out.extracted === e.extracted.book + e.extracted.listing,
  });
  return [
    {
      key: 'limit',
      name: 'no-queue limit (fetch + cheerio/slim + Set)',
      cmd: process.execPath,
      args: () => [join(build, 'limit.js'), '--start', start, '--concurrency', String(C)],
      parse: lastJson,
      itemsOk: extractedOk,
    },
    {
      key: 'limit-pipeline',
      name: 'limit + Crawl Studio analysePage (no queue, no store)',
      cmd: process.execPath,
      prepare: ({ dir }) => ({ task: taskFile(dir) }),
      args: ({ task }) => [
        join(build, 'limit.js'),
        '--start',
        start,
        '--concurrency',
        String(C),
        '--pipeline',
        '--task',
        task,
      ],
      parse: lastJson,
      itemsOk: extractedOk,
    },
    cs(1),
    ...(against ? [cs(1, against, '-b')] : []),
    cs(2),
    {
      key: 'crawlee',
      name: 'Crawlee CheerioCrawler (defaults, persistence on)',
      cmd: process.execPath,
      args: () => [join(here, 'crawlers', 'crawlee.mjs'), '--start', start, '--concurrency', String(C)],
      parse: lastJson,
      itemsOk: extractedOk,
    },
    {
      key: 'crawlee-np',
      name: 'Crawlee CheerioCrawler (persistence off)',
      cmd: process.execPath,
      args: () => [join(here, 'crawlers', 'crawlee.mjs'), '--start', start, '--concurrency', String(C), '--no-persist'],
      parse: lastJson,
      itemsOk: extractedOk,
    },
    {
      key: 'scrapy',
      name: `Scrapy ${ctx.scrapyVersion ?? ''} (Debian python3-scrapy)`.replace('  ', ' '),
      skip: ctx.scrapyVersion ? null : 'python3-scrapy is not installed',
      cmd: '/usr/bin/python3',
      args: ({ dir }) => [join(here, 'crawlers', 'scrapy_spider.py'), start, String(C), join(dir, 'items.jsonl')],
      parse: (output, { dir }) => {
        const r = lastJson(output);
        if (r && existsSync(join(dir, 'items.jsonl'))) {
          const feed = {};
          for (const l of readFileSync(join(dir, 'items.jsonl'), 'utf8').split('\n'))
            if (l) feed[JSON.parse(l).type] = (feed[JSON.parse(l).type] ?? 0) + 1;
          r.feed = feed;
        }
        return r;
      },
      itemsOk: (out, e) =>
        extractedOk(out, e) &&
        out.feed &&
        out.feed.book === e.extracted.book &&
        out.feed.listing === e.extracted.listing,
    },
  ];
}

function wrk(url, seconds) {
  const r = spawnSync('wrk', ['-t1', `-c${C}`, `-d${seconds}s`, '--latency', url], { encoding: 'utf8' });
  if (r.status !== 0) return null;
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(r.stdout)?.[1]);
  const transfer = /Transfer\/sec:\s+([\d.]+\w+)/.exec(r.stdout)?.[1];
  const p50 = /50%\s+([\d.]+\w+)/.exec(r.stdout)?.[1];
  const p99 = /99%\s+([\d.]+\w+)/.exec(r.stdout)?.[1];
  return { rps, transfer, p50, p99 };
}

async function micro(ctx) {
  const out = {};
  log('micro: extraction per page by parser');
  const taskDir = join(tmp, 'micro');
  mkdirSync(taskDir, { recursive: true });
  const task = join(taskDir, 'bench.crawl.yaml');
  writeFileSync(task, benchTask({ base: ctx.nginx.url, concurrency: C }));
  const ex = spawnSync(
    process.execPath,
    [
      join(build, 'micro-extract.js'),
      '--site',
      ctx.site,
      '--task',
      task,
      '--base',
      ctx.nginx.url,
      '--ms',
      quick ? '150' : '300',
    ],
    { encoding: 'utf8' },
  );
  out.extract = lastJson(ex.stdout) ?? { error: failure(ex) };
  const se = spawnSync(process.execPath, [join(build, 'micro-selectors.js'), '--site', ctx.site], { encoding: 'utf8' });
  out.selectors = lastJson(se.stdout) ?? { error: failure(se) };

  const redis = await startRedis({ dir: join(taskDir, 'redis'), appendOnly: false });
  services.push(redis);
  log(`micro: dedup memory at ${DEDUP_URLS.toLocaleString('en-US')} URLs`);
  const dd = spawnSync(
    process.execPath,
    [join(build, 'micro-dedup.js'), '--redis', redis.url, '--urls', String(DEDUP_URLS)],
    { encoding: 'utf8' },
  );
  out.dedup = lastJson(dd.stdout) ?? { error: failure(dd) };
  log(
    `micro: frontier memory per waiting URL at ${DEDUP_URLS.toLocaleString('en-US')} URLs, and as BullMQ jobs (before the frontier)`,
  );
  const fr = spawnSync(
    process.execPath,
    [
      join(build, 'micro-frontier.js'),
      '--redis',
      redis.url,
      '--urls',
      String(DEDUP_URLS),
      '--before',
      String(DEDUP_URLS),
    ],
    { encoding: 'utf8' },
  );
  out.frontier = lastJson(fr.stdout) ?? { error: failure(fr) };
  log("micro: the queue alone (BullMQ jobs with the engine's options, a processor that does nothing)");
  const qf = spawnSync(
    process.execPath,
    [
      join(build, 'micro-queue.js'),
      '--redis',
      redis.url,
      '--jobs',
      quick ? '5000' : '20000',
      '--concurrency',
      String(C),
    ],
    { encoding: 'utf8' },
  );
  out.queue = lastJson(qf.stdout) ?? { error: failure(qf) };

  log(`micro: item writes (${STORE_ITEMS.toLocaleString('en-US')} items) into SQLite and PostgreSQL`);
  let pg = null;
  try {
    pg = await startPostgres({ dir: `/tmp/cs-bench-pg-${Date.now().toString(36)}` });
    services.push(pg);
  } catch (err) {
    out.postgresError = err.message;
  }
  const st = spawnSync(
    process.execPath,
    [
      join(build, 'micro-store.js'),
      '--sqlite',
      join(taskDir, 'items.sqlite'),
      ...(pg ? ['--postgres', pg.url] : []),
      '--redis',
      redis.url,
      '--items',
      String(STORE_ITEMS),
    ],
    { encoding: 'utf8' },
  );
  out.store = lastJson(st.stdout) ?? { error: failure(st) };
  if (pg) {
    await pg.stop();
    services.splice(services.indexOf(pg), 1);
  }
  await redis.stop();
  services.splice(services.indexOf(redis), 1);

  log('micro: editor (activation, preview latency on 300 KB, results first rows, .vsix size)');
  const repo = resolve(here, '..');
  const pkg = spawnSync(process.execPath, ['scripts/package.mjs', 'vsix'], { cwd: repo, encoding: 'utf8' });
  const vsix = pkg.status === 0 ? pkg.stdout.trim().split('\n').pop() : null;
  const ed = spawnSync(
    process.execPath,
    [
      join(build, 'micro-editor.js'),
      '--extension',
      join(repo, 'out', 'stage-vsix', 'dist', 'extension.js'),
      ...(vsix ? ['--vsix', vsix] : []),
      '--items',
      quick ? '20000' : '100000',
    ],
    { encoding: 'utf8' },
  );
  out.editor = lastJson(ed.stdout) ?? {
    error: `${pkg.status === 0 ? '' : `packaging: ${failure(pkg)}; `}${failure(ed)}`,
  };
  return out;
}

async function profileRun(ctx) {
  const dir = join(tmp, 'profile');
  mkdirSync(join(dir, 'prof'), { recursive: true });
  const redis = await startRedis({ dir: join(dir, 'redis') });
  services.push(redis);
  const task = join(dir, 'bench.crawl.yaml');
  writeFileSync(task, benchTask({ base: ctx.nginx.url, concurrency: C }));
  const mon = startMonitor(redis.port);
  const slow = await startSlowlog(redis.port);
  // --cpu-prof is not allowed in NODE_OPTIONS: the CLI gets it on its command line, the worker through a
  // wrapper that the CLI spawns instead of node (lib/prof-preload.cjs).
  const wrapper = join(dir, 'node-prof.sh');
  writeFileSync(wrapper, `#!/bin/sh\nexec ${process.execPath} --cpu-prof --cpu-prof-dir=${join(dir, 'prof')} "$@"\n`, {
    mode: 0o755,
  });
  const res = await runMeasured(
    process.execPath,
    [
      '--cpu-prof',
      `--cpu-prof-dir=${join(dir, 'prof')}`,
      '-r',
      join(here, 'lib', 'prof-preload.cjs'),
      join(build, 'cli.js'),
      'run',
      task,
      '--workers',
      '1',
      '--concurrency',
      String(C),
      '--redis',
      redis.url,
      '--fresh',
    ],
    // No code cache: V8 rejects one made without --cpu-prof, so each profiled start compiled and wrote its cache
    // again, a third of a short crawl's profile that no user run pays.
    { cwd: dir, env: { BENCH_NODE_WRAPPER: wrapper, CRAWL_STUDIO_CODE_CACHE: 'off' } },
  );
  if (res.code !== 0) log(res.output.slice(-2000));
  await new Promise((r) => setTimeout(r, 300));
  const cmds = mon.stop();
  const scriptTime = await slow.stop();
  await redis.stop();
  services.splice(services.indexOf(redis), 1);
  const pages = Number((/pages fetched\s+([\d,]+)/.exec(res.output)?.[1] ?? '0').replace(/,/g, ''));
  const profiles = readdirSync(join(dir, 'prof')).filter((f) => f.endsWith('.cpuprofile'));
  const summaries = profiles.map((f) => {
    const s = summariseProfile(join(dir, 'prof', f));
    const b = breakdown(join(dir, 'prof', f));
    return {
      file: f,
      ...s,
      categories: [...b.categories].sort((x, y) => y[1] - x[1]).map(([name, us]) => ({ name, ms: us / 1000 })),
    };
  });
  // The worker is the profile with most busy time; the CLI (coordinator + writer) is the other.
  summaries.sort((a, b) => b.busyMs - a.busyMs);
  // Which script each SHA1 is (the engine's and BullMQ's, src/script-names.ts); unnamed ones keep their SHA1.
  const names = lastJson(
    spawnSync(process.execPath, [join(build, 'script-names.js')], { encoding: 'utf8', cwd: join(here, '..') }).stdout,
  );
  const scripts = Object.entries(scriptTime).map(([sha, s]) => ({
    name: names?.shas?.[sha] ?? sha.slice(0, 12),
    ...s,
  }));
  return { pages, wallS: res.wallS, cmds, scripts, summaries };
}

function fmt(n, d = 0) {
  if (n === null || n === undefined || Number.isNaN(n)) return '–';
  return Number(n).toLocaleString('en-US', { minimumFractionDigits: d, maximumFractionDigits: d });
}
const mb = (b) => (b ? `${fmt(b / 1048576, 0)} MB` : '–');

/** A row's Redis memory (peak), commands per page and round trips per page, as table cells. */
function redisCells(r) {
  if (!r.redis) return '– | – | –';
  return `${mb(r.redis.usedMemory)} (${mb(r.redis.usedMemoryPeak)}) | ${fmt(r.redis.commands / r.pages, 1)} | ${fmt(r.redis.reads / r.pages, 1)}`;
}

/** The broad-crawl section of the report: what it measures, every run, and the target. */
function broadReport(b) {
  const L = [];
  const total = b.hosts * b.pagesPerHost;
  // Every host once a delay: the ideal rate, and the ideal wall time after the first page request.
  const ideal = b.hosts / b.delayS;
  const spanS = (b.pagesPerHost - 1) * b.delayS;
  L.push(
    `**A broad crawl** (issue 19) — ${fmt(b.hosts)} hosts on loopback (from 127.0.0.2, one address each, one nginx listening on every address), ` +
      `${b.pagesPerHost} tiny pages each (the start page links to the other ${b.pagesPerHost - 1}), ${fmt(total)} pages in all, every crawler told to take at most ` +
      `one request of a host at a time and ${b.delayS} s between two (Crawl Studio: \`politeness.perHost: { concurrency: 1, delay: ${b.delayS}s }\`, defaults otherwise; ` +
      `Scrapy: DownloaderAwarePriorityQueue, CONCURRENT_REQUESTS ${C}, CONCURRENT_REQUESTS_PER_DOMAIN 1, DOWNLOAD_DELAY ${b.delayS}, RANDOMIZE_DOWNLOAD_DELAY off; ` +
      `Crawlee: sameDomainDelaySecs ${b.delayS}, maxConcurrency ${C}), ${C} requests in flight at most, robots.txt obeyed. ` +
      `Politeness, not the CPU, sets the pace here: the ideal is every host once every ${b.delayS} s, **${fmt(ideal)} pages/s** (issue 36 measures it between the first and last page request: the fetch window), and no crawl can end sooner than ` +
      `${fmt(spanS)} s after its first page request (each host's last page comes ${b.pagesPerHost - 1} delays after its first), so the ideal wall time is ` +
      `${fmt(spanS)} s + the first-page time (start-up to the first request in nginx's log). A crawler whose pages wait at a few hosts' gates ` +
      `while the other hosts sit idle (head-of-line blocking) falls far below it. **Violations** = two page requests of one host less than ${b.delayS} s apart ` +
      `in nginx's log (\`$msec\`). Runs stopped at ${fmt(b.timeoutS)} s report their rate so far.`,
  );
  L.push('');
  L.push(
    `| crawler | run | complete | pages | wall s | pages/s | % of ideal pages/s | % of ideal in the fetch window | first page s | ideal wall s (${fmt(spanS)} + first page) | wall vs ideal | fetch window s | host span median / max s | gap between pages of a host p50 / p90 / max s | first page of each host after the first host, median / last s | violations (hosts) | of them over 50 ms short | min gap s | robots.txt fetches | CPU s / 1,000 pages | other CPU s |`,
  );
  L.push('|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|');
  for (const r of b.rows) {
    if (r.skipped) {
      L.push(`| ${r.name} | – | skipped: ${r.skipped} ||||||||||||||||||`);
      continue;
    }
    const c = r.check;
    const idealWall = spanS + c.firstPageS;
    const timedOut = r.code === null || r.wallS * 1000 >= b.timeoutS * 1000 - 100;
    const status = r.complete
      ? 'yes'
      : `**no** (${[timedOut ? `stopped at ${fmt(b.timeoutS)} s` : '', c.ok ? '' : `missing ${c.missing}, twice ${c.twice}, unexpected ${c.unexpected}, errors ${c.errors}`, r.itemsOk ? '' : `items ${JSON.stringify(r.items)}`].filter(Boolean).join('; ')})`;
    L.push(
      `| ${r.name} | ${r.round + 1} | ${status} | ${fmt(r.pages)} | ${fmt(r.wallS, 1)} | **${fmt(r.pagesPerSec, 1)}** | **${fmt((r.pagesPerSec / ideal) * 100, 1)}%** | ${fmt((r.pages / c.windowS / ideal) * 100, 1)}% | ${fmt(c.firstPageS, 2)} | ${fmt(idealWall, 1)} | ${fmt((idealWall / r.wallS) * 100)}% ` +
        `| ${fmt(c.windowS, 1)} | ${fmt(c.medianHostSpanS, 1)} / ${fmt(c.maxHostSpanS, 1)} | ${fmt(c.gapP50S, 3)} / ${fmt(c.gapP90S, 3)} / ${fmt(c.gapMaxS, 3)} | ${fmt(c.hostStartP50S, 2)} / ${fmt(c.hostStartMaxS, 2)} | ${fmt(c.violations)} (${fmt(c.hostsViolating)}) | ${fmt(c.violationsBy50ms)} | ${fmt(c.minGapS, 3)} | ${fmt(c.robotsFetches)} | ${fmt(r.cpuPer1000, 2)} | ${fmt(r.otherCpuS, 1)} |`,
    );
  }
  // Politeness counts when a gap is short by more than the jitter between a request's admission and its arrival.
  const best = (key) =>
    b.rows
      .filter((r) => r.key === key && r.complete && r.check.violationsBy50ms === 0)
      .reduce((a, r) => (!a || r.pagesPerSec > a.pagesPerSec ? r : a), null);
  L.push('');
  for (const w of [1, 2]) {
    const runs = b.rows.filter((r) => r.key === `broad-cs${w}`);
    if (!runs.length) continue;
    const r = best(`broad-cs${w}`);
    L.push(
      `- ≥ 95% of the ideal ${fmt(ideal)} pages/s, ${w} worker${w > 1 ? 's' : ''}: runs ${runs.map((x) => `${fmt((x.pagesPerSec / ideal) * 100, 1)}%`).join(', ')} of the wall time, ` +
        `${runs.map((x) => `${fmt((x.pages / x.check.windowS / ideal) * 100, 1)}%`).join(', ')} in the fetch window` +
        ` — ${r && r.pages / r.check.windowS >= 0.95 * ideal ? 'met' : '**not met**'} in the fetch window${r ? '' : ' (no complete run without gaps over 50 ms short)'}`,
    );
  }
  // Issue 19: the cluster rows against one node, and how evenly the primaries shared the crawl.
  const clustered = b.rows.filter((r) => r.redis?.perNode);
  if (clustered.length) {
    L.push('');
    L.push(
      "On a local 3-primary Redis Cluster (the task split into one partition per primary, frontier/layout.ts): each primary's used_memory at the end " +
        "(the run's seen sets, kept jobs, counters), its commands (INFO commandstats, those run inside Lua included) and its CPU, and how far the most " +
        'distant primary is from their mean (target ±20%):',
    );
    L.push('');
    L.push(
      '| crawler | run | pages/s | % of ideal | primary: memory MB / commands / CPU s | memory spread | commands spread |',
    );
    L.push('|---|---|---|---|---|---|---|');
    const spread = (v) => {
      const mean = v.reduce((a, x) => a + x, 0) / v.length;
      return Math.max(...v.map((x) => Math.abs(x - mean) / mean));
    };
    for (const r of clustered) {
      const n = r.redis.perNode;
      L.push(
        `| ${r.name} | ${r.round + 1} | ${fmt(r.pagesPerSec, 1)} | ${fmt((r.pagesPerSec / (b.hosts / b.delayS)) * 100, 1)}% | ${n.map((x) => `${fmt(x.usedMemory / 1e6, 2)} / ${fmt(x.commands)} / ${fmt(x.cpuS, 2)}`).join('; ')} ` +
          `| ${fmt(spread(n.map((x) => x.usedMemory)) * 100, 1)}% | ${fmt(spread(n.map((x) => x.commands)) * 100, 1)}% |`,
      );
    }
  }
  return L;
}

function report(ctx, rows, m, prof) {
  const L = [];
  // The bar is the faster no-queue row: the limit's own hand-written extraction, or the same loop running Crawl
  // Studio's analysePage. Whichever parse-and-extract path is faster, the ratio then measures only the queue,
  // politeness, dedup and storage.
  const noQueue = rows.filter((r) => (r.key === 'limit' || r.key === 'limit-pipeline') && r.complete);
  const limit = noQueue.length ? noQueue.reduce((a, b) => (b.pagesPerSec > a.pagesPerSec ? b : a)) : null;
  // The slow site's bar: the same loop behind the same slow proxy.
  const slowLimit = ctx.slow?.find((r) => r.key === 'limit-pipeline-slow');
  const lin = linearity(
    ctx.scale?.row,
    rows.find((r) => r.key === 'cs1'),
  );
  const date = new Date().toISOString();
  L.push(`# Crawl Studio benchmark — ${date.slice(0, 10)}${quick ? ' (quick)' : ''}`);
  L.push('');
  L.push(
    `Run ${date}, ${ctx.host}. Crawl Studio built from ${ctx.source.root} at \`${ctx.source.describe}\` (${ctx.source.builtAt}). Command: \`${ctx.command}\`.`,
  );
  L.push('');
  const e = ctx.expected;
  // A broad-only run crawls its own site (its section says what it is), not the standard one.
  if (rows.length || ctx.scale || ctx.slow || ctx.autoscale || m)
    L.push(
      `**Site**: ${fmt(e.pages.length)} pages to fetch (${SITE.list} list pages in 2 variants, ${fmt(e.items.book)} books, /, /about.html), ` +
        `HTML ${fmt(e.htmlBytes.min / 1024, 1)}–${fmt(e.htmlBytes.max / 1024, 1)} KB (mean ${fmt(e.htmlBytes.mean / 1024, 1)} KB), robots-disallowed /private/, ` +
        `off-site, mailto: and javascript: links, duplicates by fragment, query order and tracking parameters. Items: ${fmt(e.extracted.book)} books + ` +
        `${fmt(e.extracted.listing)} listings extracted (${fmt(e.items.listing)} distinct). Served by nginx ${ctx.nginxVersion} (1 worker) on 127.0.0.1.`,
    );
  if (ctx.wrk) {
    L.push('');
    L.push(
      `**Server ceiling** (wrk, ${C} connections, 1 thread): ${ctx.wrk.map((w) => `${w.page} page ${fmt(w.rps)} req/s (${w.transfer}/s, p50 ${w.p50}, p99 ${w.p99})`).join('; ')} — ` +
        `${fmt(ctx.wrk[0].rps / Math.max(...rows.map((r) => r.pagesPerSec || 0)), 0)}× the fastest crawler below, so the server is not the bottleneck.`,
    );
  }
  if (rows.length) {
    L.push('');
    L.push(
      `**Crawlers** — concurrency ${C} in flight for every crawler (Crawl Studio with 2 workers: ${C / 2} each), robots.txt obeyed by all, in one run, one after the other. Ratios are to the faster no-queue row${limit ? ` (this run: ${limit.name})` : ''}:`,
    );
    L.push('');
    L.push(
      '| crawler | complete | pages | wall s | pages/s | pages/s (fetch window) | ratio to limit | CPU s / 1,000 pages | peak RSS | Redis mem (peak) | Redis cmds / page | Redis round trips / page |',
    );
    L.push('|---|---|---|---|---|---|---|---|---|---|---|---|');
    for (const r of rows) {
      if (r.skipped) {
        L.push(`| ${r.name} | skipped: ${r.skipped} | | | | | | | | | | |`);
        continue;
      }
      const ratio = limit ? r.pagesPerSec / limit.pagesPerSec : null;
      const wratio =
        limit && r.windowPagesPerSec && limit.windowPagesPerSec ? r.windowPagesPerSec / limit.windowPagesPerSec : null;
      L.push(
        `| ${r.name} | ${r.complete ? 'yes' : `**no** (${[r.check.ok ? '' : `missing ${r.check.missing}, twice ${r.check.twice}, unexpected ${r.check.unexpected}, errors ${r.check.errors}`, r.itemsOk ? '' : `items ${JSON.stringify(r.items)}`].filter(Boolean).join('; ')})`} ` +
          `| ${fmt(r.pages)} | ${fmt(r.wallS, 1)} | **${fmt(r.pagesPerSec)}**${r.runs?.length > 1 ? ` (runs: ${r.runs.map((x) => fmt(x)).join(', ')})` : ''} | ${fmt(r.windowPagesPerSec)} | ${ratio ? `${fmt(ratio * 100)}%` : '–'}${wratio ? ` (${fmt(wratio * 100)}%)` : ''} ` +
          `| ${fmt(r.cpuPer1000, 2)} | ${mb(r.peakRss)} | ${redisCells(r)} |`,
      );
    }
    L.push('');
    L.push(
      'CPU split and machine load during each run (CPU seconds; "other" is everything else on the machine — this 2-core machine is shared, so other work slows wall-clock numbers but hardly the CPU per page):',
    );
    L.push('');
    L.push('| crawler | crawler tree | Redis | nginx | other | load avg (start → end) |');
    L.push('|---|---|---|---|---|---|');
    for (const r of rows)
      if (!r.skipped)
        L.push(
          `| ${r.name} | ${fmt(r.treeCpuS, 1)} | ${fmt(r.redisCpuS, 1)} | ${fmt(r.nginxCpuS, 1)} | ${fmt(r.otherCpuS, 1)} | ${fmt(r.load[0], 1)} → ${fmt(r.load[1], 1)} |`,
        );
  }
  const peers = {
    crawleeNp: rows.find((r) => r.key === 'crawlee-np'),
    scrapy: rows.find((r) => r.key === 'scrapy' && !r.skipped),
  };
  // The --against build's row is an experiment, not the product: it is compared below, never counted for a target.
  const csRows = rows.filter((r) => r.key.startsWith('cs') && !r.key.endsWith('-b'));
  const b = rows.find((r) => r.key === 'cs1-b' && !r.skipped);
  const a = rows.find((r) => r.key === 'cs1');
  if (a && b) {
    const rounds = (ctx.perRound ?? []).filter((r) => r.cs1 && r['cs1-b']);
    const ratios = rounds.map((r) => r['cs1-b'] / r.cs1).sort((x, y) => x - y);
    const median = ratios.length ? ratios[Math.floor(ratios.length / 2)] : null;
    L.push('');
    L.push(
      `**A/B** (\`--against ${against}\`): pages/s of the other build over this one's, round by round: ${ratios.map((x) => fmt(x, 3)).join(', ') || '–'}` +
        `${median ? ` (median ${fmt(median, 3)})` : ''}; CPU per 1,000 pages of the best runs ${fmt(a.cpuPer1000, 2)} → ${fmt(b.cpuPer1000, 2)} s` +
        `; Redis round trips per page ${fmt(a.redis.reads / a.pages, 2)} → ${fmt(b.redis.reads / b.pages, 2)}, bytes in per page ${fmt(a.redis.netIn / a.pages)} → ${fmt(b.redis.netIn / b.pages)}.`,
    );
  }
  if (csRows.length) {
    L.push('');
    L.push('**Targets** (Crawl Studio, best of its rows):');
    L.push('');
    const best = csRows.reduce((a, b) => (b.pagesPerSec > a.pagesPerSec ? b : a));
    const bar = (r) => Math.max(r.limit ?? 0, r['limit-pipeline'] ?? 0);
    const paired = (k) =>
      (ctx.perRound ?? []).filter((r) => bar(r) > 0 && r[k]).map((r) => `${fmt((r[k] / bar(r)) * 100)}%`);
    const t = [];
    if (limit) {
      t.push(
        `- ≥ 90% of the no-queue limit's pages/s: ${fmt((best.pagesPerSec / limit.pagesPerSec) * 100)}% (${best.name}, best runs) — ${best.pagesPerSec >= 0.9 * limit.pagesPerSec ? 'met' : '**not met**'}; round by round (each Crawl Studio run against the faster no-queue run of the same round): 1 worker ${paired('cs1').join(', ') || '–'}, 2 workers ${paired('cs2').join(', ') || '–'}`,
      );
      t.push(
        `  - CPU per page, the contention-robust view: Crawl Studio needs ${csRows.map((r) => `${fmt(r.cpuPer1000 / limit.cpuPer1000, 2)}× (${r.key})`).join(', ')} the no-queue row's CPU per page (crawler + Redis)`,
      );
      const slowCs = ctx.slow?.filter((r) => r !== slowLimit && r.complete) ?? [];
      if (slowLimit?.complete && slowCs.length) {
        const s = slowCs.reduce((a, b) => (b.pagesPerSec > a.pagesPerSec ? b : a));
        const ratio = s.pagesPerSec / slowLimit.pagesPerSec;
        t.push(
          `  - on the slow site (${SLOW_MS} ms a response), where the network sets the pace as on real sites, not the two cores: ${fmt(ratio * 100)}% ` +
            `of the no-queue loop's ${fmt(slowLimit.pagesPerSec)} pages/s (${s.name}) — ${ratio >= 0.9 ? 'met there' : '**not met** there'}`,
        );
      }
      const big = ctx.scale?.limitRow;
      if (lin && big?.complete) {
        t.push(
          `  - on the ${fmt(lin.large.pages)}-page site, where start-up and the JIT's warm-up are spread over ${fmt(lin.large.pages / lin.small.pages, 0)}× the pages: ${fmt((lin.large.pagesPerSec / big.pagesPerSec) * 100)}% ` +
            `of the no-queue loop's ${fmt(big.pagesPerSec)} pages/s (fetch window ${fmt((lin.large.windowPagesPerSec / big.windowPagesPerSec) * 100)}%), at ${fmt(lin.large.cpuPer1000 / big.cpuPer1000, 2)}× its CPU per page`,
        );
      }
    }
    if (peers.crawleeNp)
      t.push(
        `- ≥ 3× Crawlee with persistence off: ${fmt(best.pagesPerSec / peers.crawleeNp.pagesPerSec, 1)}× — ${best.pagesPerSec >= 3 * peers.crawleeNp.pagesPerSec ? 'met' : '**not met**'}`,
      );
    if (peers.scrapy)
      t.push(
        `- ≥ 5× Scrapy: ${fmt(best.pagesPerSec / peers.scrapy.pagesPerSec, 1)}× — ${best.pagesPerSec >= 5 * peers.scrapy.pagesPerSec ? 'met' : '**not met**'}`,
      );
    t.push(
      `- Redis round trips per page: ${csRows.map((r) => `${fmt(r.redis.reads / r.pages, 1)} (${r.key})`).join(', ')}; commands executed per page, Lua-internal included: ${csRows.map((r) => fmt(r.redis.commands / r.pages, 1)).join(', ')}`,
    );
    t.push(
      `  - bytes through Redis per page, in (clients' requests) / out (replies): ${csRows.map((r) => `${fmt(r.redis.netIn / r.pages)} / ${fmt(r.redis.netOut / r.pages)} (${r.key})`).join(', ')}`,
    );
    if (m?.frontier?.site) {
      const f = m.frontier;
      t.push(
        `- ≤ 100 bytes of Redis per waiting URL at ${fmt(f.urls)} waiting URLs (seen set + compact frontier, INFO used_memory delta): ${fmt(f.site.usedMemoryBytesPerUrl, 1)} over ${fmt(f.site.hosts)} hosts — ` +
          `${f.site.usedMemoryBytesPerUrl <= 100 ? 'met' : '**not met**'}; ${fmt(f.broad.usedMemoryBytesPerUrl, 1)} over ${fmt(f.broad.hosts)} hosts (~${fmt(f.urls / f.broad.hosts)} a host) — ` +
          `${f.broad.usedMemoryBytesPerUrl <= 100 ? 'met' : '**not met**'}` +
          (f.before ? `; as BullMQ jobs (before): ${fmt(f.before.usedMemoryBytesPerUrl, 1)}` : ''),
      );
    }
    if (m?.dedup?.engineUsedMemoryBytesPerUrl)
      t.push(
        `- ≤ 16 bytes/URL dedup at ${fmt(m.dedup.urls)} URLs: ${fmt(m.dedup.engineUsedMemoryBytesPerUrl, 1)} bytes/URL (INFO used_memory delta) — ${m.dedup.engineUsedMemoryBytesPerUrl <= 16 ? 'met' : '**not met**'}`,
      );
    if (Array.isArray(m?.store))
      for (const s of m.store.filter((x) => x.path === 'pipeline'))
        t.push(
          `- ≥ 20,000 items/s into ${s.store} with dedup (stream → writer → store): ${fmt(s.itemsPerSec)} items/s — ${s.itemsPerSec >= 20_000 ? 'met' : '**not met**'}`,
        );
    if (lin)
      t.push(
        `- Linear cost, pages/s on the ${fmt(lin.large.pages)}-page site within 10% of the ${fmt(lin.small.pages)}-page site's (1 worker): ${fmt(lin.wall * 100)}% of it (fetch window ${fmt(lin.window * 100)}%), CPU per page ${fmt(lin.cpu, 2)}× — ${lin.met ? 'met' : '**not met**'} (below)`,
      );
    L.push(...t);
  }
  if (lin) {
    L.push('');
    L.push(
      `**Cost grows linearly** — the same crawl on a site ${fmt(lin.large.pages / lin.small.pages, 0)}× the size (${SCALE_LIST} list pages; generated and served like the standard site), ` +
        "one run after the standard rows. Met when neither pages/s nor the fetch window's pages/s falls more than 10% below the standard site's: " +
        'a per-page cost that grew with the seen set, the queue or the store would show here. (The larger crawl spreads its start-up over more pages, so its wall-clock rate may be higher.)',
    );
    L.push('');
    L.push(
      '| site | complete | pages | wall s | pages/s | pages/s (fetch window) | CPU s / 1,000 pages | peak RSS | Redis mem (peak) | Redis cmds / page | Redis round trips / page |',
    );
    L.push('|---|---|---|---|---|---|---|---|---|---|---|');
    for (const r of [lin.small, lin.large, ...(ctx.scale?.limitRow ? [ctx.scale.limitRow] : [])]) {
      L.push(
        `| ${r.key === 'limit-scale' ? `${fmt(r.pages)} pages, no-queue limit (fetch + analysePage + Set)` : `${fmt(r.pages)} pages`} | ${r.complete ? 'yes' : `**no** (${JSON.stringify(r.check.examples)} items ${JSON.stringify(r.items)})`} | ${fmt(r.pages)} | ${fmt(r.wallS, 1)} | **${fmt(r.pagesPerSec)}** | ${fmt(r.windowPagesPerSec)} ` +
          `| ${fmt(r.cpuPer1000, 2)} | ${mb(r.peakRss)} | ${redisCells(r)} |`,
      );
    }
  }
  if (ctx.slow?.length) {
    L.push('');
    L.push(
      `**A slow site** — the standard site with every response ${SLOW_MS} ms late (a proxy in front of nginx): the no-queue loop and Crawl Studio's two ways of holding ` +
        `${C} requests in flight. The network sets the pace here, as it does on real sites, so the ratio to the loop is what the queue, politeness, dedup and the store ` +
        'cost where the CPU is not the limit; CPU per page says what the second worker process costs.',
    );
    L.push('');
    L.push(
      '| crawler | complete | pages | wall s | pages/s | pages/s (fetch window) | ratio to limit | CPU s / 1,000 pages | peak RSS |',
    );
    L.push('|---|---|---|---|---|---|---|---|---|');
    for (const r of ctx.slow) {
      const ratio = slowLimit?.complete ? `${fmt((r.pagesPerSec / slowLimit.pagesPerSec) * 100)}%` : '–';
      L.push(
        `| ${r.name} | ${r.complete ? 'yes' : `**no** (${JSON.stringify(r.check.examples)})`} | ${fmt(r.pages)} | ${fmt(r.wallS, 1)} | **${fmt(r.pagesPerSec)}** | ${fmt(r.windowPagesPerSec)} ` +
          `| ${ratio} | ${fmt(r.cpuPer1000, 2)} | ${mb(r.peakRss)} |`,
      );
    }
  }
  if (ctx.broad) L.push('', ...broadReport(ctx.broad));
  if (ctx.browser) L.push('', ...browserReport(ctx.browser));
  if (ctx.autoscale) L.push('', ...autoscaleReport(ctx.autoscale));
  const cs1 = rows.find((r) => r.key === 'cs1');
  if (cs1?.redis) {
    const calls = Object.entries(cs1.redis.calls)
      .sort((a, b) => b[1] - a[1])
      .slice(0, 14);
    L.push('');
    L.push(
      `Redis commands per page for Crawl Studio (1 worker), from INFO commandstats (Lua-internal calls included): ${calls.map(([k, v]) => `${k} ${fmt(v / cs1.pages, 2)}`).join(', ')}.`,
    );
    const procs = cs1.processes.filter((p) => processKind(p.cmd));
    if (procs.length)
      L.push(
        `Process CPU (last sample): ${procs.map((p) => `${processKind(p.cmd)} ${fmt(p.cpu, 1)} s, peak RSS ${mb(p.rss)}`).join('; ')}.`,
      );
  }
  const byThread = rows
    .filter((r) => r.threads?.length && /^(limit|cs\d)/.test(r.key))
    .flatMap((r) => threadBreakdown(r).map((t) => ({ r, ...t })));
  if (byThread.length) {
    L.push('');
    L.push(
      'CPU by thread, ms per page (from /proc/<pid>/task, sampled every 0.1 s, so a process\'s last 0.1 s is missing; "other threads" are V8\'s ' +
        "compiler and GC helpers and libuv's pool; the worker's analysis thread is its busiest thread after the main one):",
    );
    L.push(
      '',
      '| crawler | process | main thread | analysis thread | other threads | Redis | all, per page |',
      '|---|---|---|---|---|---|---|',
    );
    for (const { r, label, main, analysis, helpers, first } of byThread) {
      const per = (s) => fmt((s / r.pages) * 1000, 2);
      L.push(
        `| ${first ? r.name : ''} | ${label} | ${per(main)} | ${analysis === null ? '–' : per(analysis)} | ${per(helpers)} | ${first && r.redis ? per(r.redisCpuS) : '–'} | ${first ? fmt(r.cpuPer1000, 2) : ''} |`,
      );
    }
  }
  if (m) {
    L.push('');
    L.push('## Micro-benchmarks');
    const e = m.editor;
    if (e && !e.error) {
      L.push('');
      L.push('| editor | measured | target |', '| --- | --- | --- |');
      if (e.activation)
        L.push(
          `| extension load + activate (production bundle, stubbed vscode) | ${fmt(e.activation.loadMs, 1)} + ${fmt(e.activation.activateMs, 1)} ms | ≤ 100 ms — ${e.activation.loadMs + e.activation.activateMs <= 100 ? 'met' : '**not met**'} |`,
        );
      for (const p of e.preview ?? [])
        L.push(
          `| preview update, ${p.shape} ${fmt(p.pageBytes / 1024)} KB page (parse + extract + highlights), p50 / p95 | ${fmt(p.p50Ms)} / ${fmt(p.p95Ms)} ms | ≤ 150 ms — ${p.p95Ms <= 150 ? 'met' : '**not met**'} |`,
        );
      // The picker answers a click in the same preview, so it has the preview's budget.
      for (const p of e.preview ?? [])
        if (p.pickP95Ms !== undefined)
          L.push(
            `| picker suggestion for a clicked card title, ${p.shape} ${fmt(p.pageBytes / 1024)} KB page, p50 / p95 | ${fmt(p.pickP50Ms, 1)} / ${fmt(p.pickP95Ms, 1)} ms | ≤ 150 ms — ${p.pickP95Ms <= 150 ? 'met' : '**not met**'} |`,
          );
      if (e.results)
        L.push(
          `| results view, first rows at ${fmt(e.results.items)} items; scroll page p95 | ${fmt(e.results.firstRowsMs)} ms; ${fmt(e.results.scroll.p95Ms)} ms | ≤ 300 ms — ${e.results.firstRowsMs <= 300 ? 'met' : '**not met**'} |`,
        );
      if (e.results?.filteredFirstRowsMs !== undefined)
        L.push(
          `| results view, first rows with a text filter (${fmt(e.results.filteredMatches)} of ${fmt(e.results.items)} match) | ${fmt(e.results.filteredFirstRowsMs)} ms | – |`,
        );
      if (e.vsixBytes) L.push(`| .vsix size | ${fmt(e.vsixBytes / 1048576, 2)} MB | – |`);
    } else if (e) L.push(`\nEditor micro-benchmarks: failed: ${JSON.stringify(e)}`);
    if (Array.isArray(m.extract)) {
      L.push('');
      L.push(
        "Extraction per page (CPU µs of the process, fastest of 7 time-boxed rounds, GC included; htmlparser2 parse = its parseDocument, as the engine parses; cheerio/slim load = the same parser through cheerio.load, as the engine parsed before (its per-load class keeps every DOM alive until a full GC); parse5 = cheerio's default entry point; extract = parse + the bench task's selectors through Crawl Studio's extractPage; analysePage = the worker's whole page step: parse + extraction + URL rules for every link):",
      );
      L.push('');
      L.push(
        '| page | size | items | links | htmlparser2 parse | htmlparser2 parse + extract | cheerio/slim load | cheerio/slim load + extract | parse5 parse | parse5 parse + extract | analysePage (engine) |',
      );
      L.push('|---|---|---|---|---|---|---|---|---|---|---|');
      for (const x of m.extract)
        L.push(
          `| ${x.page} | ${fmt(x.bytes / 1024, 1)} KB | ${x.items} | ${x.links} | ${fmt(x.htmlparser2ParseUs)} | ${fmt(x.htmlparser2ExtractUs)} | ${fmt(x.cheerioLoadUs)} | ${fmt(x.cheerioLoadExtractUs)} | ${fmt(x.parse5ParseUs)} | ${fmt(x.parse5ExtractUs)} | ${fmt(x.analysePageUs)} |`,
        );
    } else L.push(`\nExtraction: failed: ${JSON.stringify(m.extract)}`);
    if (m.selectors && !m.selectors.error) {
      const x = m.selectors;
      L.push('');
      L.push(
        `Inside extraction (list page, CPU µs, candidates interleaved in one process, fastest of 15 rounds): parse ${fmt(x.parse)}; ` +
          `extractPage's whole-document \`base[href]\` query ${fmt(x.baseQuery)}; ${x.scopes} items × ${x.fieldsPerScope} fields read with \`$(scope).find(selector)\` ` +
          `${fmt(x.fieldsFind)} vs with selectors compiled once (css-select compile + selectOne) ${fmt(x.fieldsPrecompiled)} (${fmt(x.fieldsFind / x.fieldsPrecompiled, 1)}× less).`,
      );
    } else if (m.selectors) L.push(`\nSelector micro-benchmark: failed: ${JSON.stringify(m.selectors)}`);
    if (Array.isArray(m.store)) {
      L.push('');
      L.push(
        `Item writes with dedup (${fmt(STORE_ITEMS)} items, 5 per page, 10% repeat an earlier key, batches of 500, policy update; PostgreSQL ${m.postgresError ? 'unavailable' : 'with fsync=off like the test suite'}):`,
      );
      L.push('');
      L.push('| store | path | items/s | seconds | rows written | key conflicts merged |');
      L.push('|---|---|---|---|---|---|');
      for (const s of m.store)
        L.push(
          `| ${s.store} | ${s.path === 'store' ? 'mergeBatch + writeBatch' : 'Redis stream → writer → store'} | **${fmt(s.itemsPerSec)}** | ${fmt(s.seconds, 2)} | ${fmt(s.written)} | ${fmt(s.conflicts + s.mergedInBatch)} |`,
        );
      if (m.postgresError) L.push(`\nPostgreSQL: ${m.postgresError}`);
    } else L.push(`\nStore writes: failed: ${JSON.stringify(m.store)}`);
    if (m.dedup && !m.dedup.error) {
      const d = m.dedup;
      L.push('');
      L.push(
        `Dedup memory at ${fmt(d.urls)} URLs (mean ${fmt(d.avgUrlChars)} characters), through lua/discover.lua with the engine's keys (${d.seenKeys} buckets, ${d.bucketBits} bucket bits, ` +
          `encodings ${JSON.stringify(d.seenEncodings)}, largest bucket ${d.maxBucketCard}, set-max-intset-entries ${d.intsetMax}):`,
      );
      L.push('');
      L.push('| representation | bytes / URL |');
      L.push('|---|---|');
      L.push(`| Crawl Studio seen buckets (INFO used_memory delta) | **${fmt(d.engineUsedMemoryBytesPerUrl, 1)}** |`);
      L.push(`| Crawl Studio seen buckets (sum of MEMORY USAGE) | ${fmt(d.engineSeenKeysBytesPerUrl, 1)} |`);
      L.push(`| plain Redis set of full URLs | ${fmt(d.plainSetBytesPerUrl, 1)} |`);
      L.push(`| set of 40-hex SHA-1 fingerprints (scrapy-redis style) | ${fmt(d.sha1HexSetBytesPerUrl, 1)} |`);
      L.push('');
      L.push(
        `Exactness on this data: ${fmt(d.falseSeenOnFirstPass)} URLs wrongly "already seen" on first sight, ${fmt(d.notSeenOnSecondPass)} missed on a second pass. Discover throughput ${fmt(d.discoverUrlsPerSec)} URLs/s (1,000 per call).`,
      );
    } else if (m.dedup) L.push(`\nDedup: failed: ${JSON.stringify(m.dedup)}`);
    if (m.frontier && !m.frontier.error) {
      const f = m.frontier;
      L.push('');
      L.push(
        `Waiting URLs (issue 19): ${fmt(f.urls)} URLs (mean ${fmt(f.avgUrlChars)} characters) discovered and left waiting, through lua/discover.lua (seen set + compact frontier, ` +
          `no worker so no window), against the same URLs as BullMQ jobs with the engine's job options plus their seen-set members, as every waiting URL was kept before (src/micro-frontier.ts):`,
      );
      L.push('');
      L.push(
        '| how the waiting URLs are kept | bytes / waiting URL (used_memory delta) | frontier keys (MEMORY USAGE) | seen keys | discover URLs/s | pages into the window /s (fill.lua alone) |',
      );
      L.push('|---|---|---|---|---|---|');
      for (const [label, r] of [
        [`compact frontier, ${fmt(f.site.hosts)} hosts`, f.site],
        [`compact frontier, ${fmt(f.broad.hosts)} hosts (~${fmt(f.urls / f.broad.hosts)} URLs a host)`, f.broad],
      ]) {
        L.push(
          `| ${label} | **${fmt(r.usedMemoryBytesPerUrl, 1)}** | ${fmt(r.frontierKeysBytesPerUrl, 1)} (${fmt(r.frontierKeys)} keys) | ${fmt(r.seenKeysBytesPerUrl, 1)} | ${fmt(r.discoverUrlsPerSec)} | ${fmt(r.takenPerSec)} |`,
        );
      }
      if (f.before)
        L.push(
          `| BullMQ jobs (before the frontier), ${fmt(f.before.urls)} URLs | **${fmt(f.before.usedMemoryBytesPerUrl, 1)}** | - | - | - | - |`,
        );
    } else if (m.frontier) L.push(`\nFrontier memory: failed: ${JSON.stringify(m.frontier)}`);
    const q = m.queue;
    if (q && !q.error) {
      const cs1 = rows.find((r) => r.key === 'cs1');
      const perJob = q.addClientMsPerJob + q.addRedisMsPerJob + q.runClientMsPerJob + q.runRedisMsPerJob;
      L.push('');
      L.push(
        `The queue alone (src/micro-queue.ts: ${fmt(q.jobs)} BullMQ jobs with the engine's job options, added with addBulk, run by a Worker at concurrency ${q.concurrency} ` +
          `whose processor does nothing; Redis without persistence): add ${fmt(q.addPerSec)} jobs/s, run ${fmt(q.runPerSec)} jobs/s; CPU per job: add ${fmt(q.addClientMsPerJob, 3)} ms client + ` +
          `${fmt(q.addRedisMsPerJob, 3)} ms Redis, run ${fmt(q.runClientMsPerJob, 3)} ms client + ${fmt(q.runRedisMsPerJob, 3)} ms Redis: ${fmt(perJob, 2)} ms a job in all` +
          (cs1
            ? `, ${fmt((perJob / cs1.cpuPer1000) * 100)}% of Crawl Studio's ${fmt(cs1.cpuPer1000, 2)} ms per page (1 worker).`
            : '.'),
      );
    } else if (q) L.push(`\nThe queue alone: failed: ${JSON.stringify(q)}`);
  }
  if (prof) {
    L.push('');
    L.push('## Where Crawl Studio spends its time (profile run, 1 worker)');
    L.push('');
    const client = Object.entries(prof.cmds.client).sort((a, b) => b[1] - a[1]);
    const lua = Object.entries(prof.cmds.lua).sort((a, b) => b[1] - a[1]);
    const tc = client.reduce((a, [, v]) => a + v, 0);
    const tl = lua.reduce((a, [, v]) => a + v, 0);
    L.push(
      `Redis MONITOR over ${fmt(prof.pages)} pages: ${fmt(tc / prof.pages, 1)} commands sent by clients per page, ${fmt(tl / prof.pages, 1)} run inside Lua per page.`,
    );
    L.push(
      `Client commands per page: ${client
        .slice(0, 20)
        .map(([k, v]) => `${k} ${fmt(v / prof.pages, 2)}`)
        .join(', ')}.`,
    );
    L.push(
      `Inside Lua per page: ${lua
        .slice(0, 14)
        .map(([k, v]) => `${k} ${fmt(v / prof.pages, 2)}`)
        .join(', ')}.`,
    );
    const scripts = [...(prof.scripts ?? [])].sort((a, b) => b.us - a.us);
    const scriptUs = scripts.reduce((a, s) => a + s.us, 0);
    if (scriptUs > 0)
      L.push(
        `Redis time inside each Lua script (SLOWLOG at threshold 0, bench/lib/slowlog.mjs; a script's time includes the commands it calls, and logging them adds to it, so read the shares): ${scripts
          .slice(0, 8)
          .map(
            (s) =>
              `${s.name} ${fmt((s.us / scriptUs) * 100)}% (${fmt(s.calls / prof.pages, 2)} calls a page, ${fmt(s.us / s.calls)} µs a call)`,
          )
          .join(', ')}.`,
      );
    for (const s of prof.summaries) {
      L.push('');
      L.push(
        `CPU profile \`${s.file}\`: ${fmt(s.busyMs)} ms busy (${fmt(((s.busyMs / prof.pages) * 1000) / 1000, 2)} ms/page), ${fmt(s.idleMs)} ms idle. Self time by area: ${s.areas.map((a) => `${a.name} ${fmt(a.share * 100)}%`).join(', ')}.`,
      );
      L.push(
        `Top functions: ${s.functions
          .slice(0, 10)
          .map((f) => `${f.name} ${fmt(f.share * 100, 1)}%`)
          .join(', ')}.`,
      );
      L.push(
        `By what a page does (bench/lib/breakdown.mjs: each sample to the first category its stack matches), µs per page: ${s.categories.map((c) => `${c.name} ${fmt((c.ms * 1000) / prof.pages)}`).join(', ')}.`,
      );
    }
  }
  L.push('');
  L.push(
    "How to read it: **pages/s** = pages fetched / wall time of the whole command (start-up, crawl, shutdown: what a user waits for); **fetch window** = pages / time from the first to the last page request in nginx's log (start-up excluded). **CPU s / 1,000 pages** = user+system CPU of the crawler's whole process tree (CLI, workers, writer) plus Redis, per 1,000 pages. **peak RSS** = largest sum of resident memory over the crawler's process tree (Redis excluded), sampled every 100 ms for the crawler rows. **Redis mem** = used_memory at the end (peak in brackets). **Redis cmds / page** = every command Redis executed (INFO commandstats delta, commands inside Lua scripts included) per page; **round trips / page** = Redis read events (total_reads_processed): one per request or pipeline the clients sent, the writer and the progress poller included. **complete** = every expected page fetched exactly once (nginx log, canonical URL), nothing unexpected or disallowed, and every item found (Crawl Studio: rows in its SQLite store after dedup; others: items extracted).",
  );
  L.push('');
  return L.join('\n');
}

async function main() {
  const t0 = Date.now();
  const source = existsSync(join(build, 'SOURCE'))
    ? JSON.parse(readFileSync(join(build, 'SOURCE'), 'utf8'))
    : { root: '?', describe: '?', builtAt: '?' };
  const nginxVersion =
    (spawnSync('nginx', ['-v'], { encoding: 'utf8' }).stderr.match(/nginx\/([\d.]+)/) ?? [])[1] ?? '?';
  const sv = spawnSync('/usr/bin/python3', ['-c', 'import scrapy; print(scrapy.__version__)'], { encoding: 'utf8' });
  const scrapyVersion = sv.status === 0 ? sv.stdout.trim() : null;
  const cpuModel = (/model name\s*:\s*(.*)/.exec(readFileSync('/proc/cpuinfo', 'utf8')) ?? [])[1] ?? '?';
  const host = `${cpuModel}, ${spawnSync('nproc', { encoding: 'utf8' }).stdout.trim()} cores, Node ${process.version}, Redis ${(spawnSync('redis-server', ['--version'], { encoding: 'utf8' }).stdout.match(/v=([\d.]+)/) ?? [])[1]}`;

  log(`site: ${SITE.list} list pages × ${SITE.per} books`);
  // The site and nginx's access log live on tmpfs: a busy disk (Redis's AOF, SQLite's fsyncs, other work on the
  // machine) must never stall the server that every crawler depends on.
  const shm = existsSync('/dev/shm') ? join('/dev/shm', `cs-bench-${process.pid}`) : tmp;
  const site = join(shm, 'site');
  execFileSync(
    process.execPath,
    [
      join(build, 'sitegen.js'),
      '--out',
      site,
      '--list',
      String(SITE.list),
      '--per',
      String(SITE.per),
      '--filler',
      String(SITE.filler),
    ],
    { stdio: ['ignore', 'ignore', 'inherit'] },
  );
  const expected = JSON.parse(readFileSync(join(site, 'expected.json'), 'utf8'));
  const nginx = await startNginx({ root: site, dir: join(shm, 'nginx') });
  services.push(nginx);
  const ctx = {
    nginx,
    expected,
    site,
    shm,
    scrapyVersion,
    nginxVersion,
    source,
    host,
    command: `node bench/run.mjs ${process.argv.slice(2).join(' ')}`.trim(),
  };
  try {
    // The server's ceiling matters to the rows on the standard site (a broad-only run has none of them).
    if (crawlerDefs(ctx).some((d) => want(d.key))) {
      log('server ceiling (wrk)');
      const w1 = wrk(`${nginx.url}/catalogue/book-7.html`, quick ? 2 : 4);
      const w2 = wrk(`${nginx.url}/catalogue/page-2.html`, quick ? 2 : 4);
      ctx.wrk =
        w1 && w2
          ? [
              { page: 'book', ...w1 },
              { page: 'list', ...w2 },
            ]
          : null;
      await new Promise((r) => setTimeout(r, 1000));
    }

    const rows = [];
    const defs = crawlerDefs(ctx).filter((d) => want(d.key));
    const repeated = new Set(['limit', 'limit-pipeline', 'cs1', 'cs1-b', 'cs2']);
    // The repeated rows first, round by round (limit, Crawl Studio, ... again), then the peers once: each
    // round's Crawl Studio/limit ratio compares runs minutes apart at most.
    const order = [];
    for (let round = 0; round < REPEAT; round++)
      for (const def of defs) if (repeated.has(def.key)) order.push([round, def]);
    for (const def of defs) if (!repeated.has(def.key)) order.push([0, def]);
    const perRound = [];
    for (const [round, def] of order) {
      {
        if (def.skip) {
          rows.push({ key: def.key, name: def.name, skipped: def.skip });
          continue;
        }
        log(`crawler: ${def.name}${REPEAT > 1 && repeated.has(def.key) ? ` (run ${round + 1} of ${REPEAT})` : ''}`);
        const busy = await settle();
        if (busy >= 0.1)
          log(`  the machine did not quiet down (${Math.round(busy * 100)}% busy): read this row's "other" column`);
        const row = await measureCrawler(def, ctx);
        if (repeated.has(def.key)) (perRound[round] ??= {})[def.key] = row.complete ? row.pagesPerSec : null;
        const i = rows.findIndex((r) => r.key === def.key);
        if (i < 0) rows.push({ ...row, runs: [row.pagesPerSec] });
        else {
          // Best of the runs (the machine is shared: the fastest run had the least interference); all are listed.
          const runs = [...rows[i].runs, row.pagesPerSec];
          rows[i] =
            row.complete && (!rows[i].complete || row.pagesPerSec > rows[i].pagesPerSec)
              ? { ...row, runs }
              : { ...rows[i], runs };
        }
      }
    }
    ctx.perRound = perRound;
    ctx.scale = want('scale') ? await scaleRun(ctx) : null;
    ctx.slow = want('slow') ? await slowRun(ctx) : null;
    ctx.broad = want('broad') ? await broadRun(ctx) : null;
    ctx.autoscale = want('autoscale') ? await autoscaleRun(ctx) : null;
    ctx.browser = want('browser') ? await browserRun(ctx) : null;
    const m = want('micro') ? await micro(ctx) : null;
    const prof = flags.profile ? await profileRun(ctx) : null;
    const md = report(ctx, rows, m, prof) + `\nWhole suite: ${fmt((Date.now() - t0) / 1000)} s.\n`;
    const browserOnly = only?.size === 1 && only.has('browser');
    const outFile =
      flags.out ??
      join(
        here,
        'results',
        `${new Date().toISOString().slice(0, 10)}${browserOnly ? '-browser' : ''}${quick ? '-quick' : ''}.md`,
      );
    writeFileSync(outFile, md);
    writeFileSync(
      join(tmp, 'raw.json'),
      JSON.stringify(
        {
          rows,
          scale: ctx.scale,
          slow: ctx.slow,
          broad: ctx.broad,
          browser: ctx.browser,
          autoscale: ctx.autoscale,
          micro: m,
          prof,
          expected: { ...expected, pages: expected.pages.length },
        },
        null,
        1,
      ),
    );
    console.log(md);
    log(`written ${outFile} (raw numbers: ${join(tmp, 'raw.json')})`);
  } finally {
    await stopAll();
    if (!flags.keep) {
      if (shm !== tmp) rmrf(shm);
      rmrf(site);
      for (const d of readdirSync(tmp)) if (d !== 'raw.json' && d !== 'profile') rmrf(join(tmp, d));
    }
  }
}

main().catch(async (err) => {
  console.error(err);
  await stopAll();
  process.exit(1);
});
