// The web monitor at the scale (issue 31): its page's load time and each API read's with 1,000,000 URLs
// waiting and 10,000 failed pages, the target being a page loaded in ≤ 300 ms. Run after `node esbuild.mjs`:
//   node bench/monitorScale.mjs [--waiting 1000000] [--failed 10000] [--loads 5] [--chromium /usr/bin/chromium]
// (about 5 minutes: the 10,000-page crawl and the enqueue of a million URLs are most of it).
// Seeded through the product only: a crawl by `crawl-studio run` of a site whose FAILED item pages answer 404 (one
// attempt each), then `crawl-studio enqueue --file` of WAITING URLs into that run with no worker to take them. Then
// `crawl-studio monitor` on it, a headless Chromium loading its page LOADS times (navigation to the task's counters
// and failures drawn), and each JSON read and /metrics timed on its own. Numbers as JSON lines, then a Markdown
// table. Timings are never asserted.
import { spawn, spawnSync } from 'node:child_process';
import { createWriteStream, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, redisInfo, startRedis, waitForPort } from './lib/services.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const arg = (name, dflt) => (process.argv.includes(name) ? process.argv[process.argv.indexOf(name) + 1] : dflt);
const WAITING = Number(arg('--waiting', '1000000'));
const FAILED = Number(arg('--failed', '10000'));
const LOADS = Number(arg('--loads', '5'));
const CHROMIUM = arg('--chromium', '/usr/bin/chromium');
const CLI = join(root, 'dist', 'cli.js');
const { chromium } = createRequire(join(root, 'package.json'))('playwright-core');
const tmp = '/dev/shm/cs-monitor-scale';
rmSync(tmp, { recursive: true, force: true });
mkdirSync(tmp, { recursive: true });
const PER = 100;
const LISTS = Math.ceil(FAILED / PER);

// LISTS list pages of PER links each to item pages that answer 404.
const site = createServer((req, res) => {
  res.setHeader('content-type', 'text/html');
  if (req.url === '/') return res.end(Array.from({ length: LISTS }, (_, i) => `<a href="/l/${i}">l${i}</a>`).join(''));
  const list = /^\/l\/(\d+)$/.exec(req.url);
  if (list) {
    const n = Math.min(PER, FAILED - Number(list[1]) * PER);
    return res.end(Array.from({ length: n }, (_, j) => `<a href="/f/${list[1]}-${j}">f</a>`).join(''));
  }
  if (req.url === '/robots.txt') return res.end('');
  res.statusCode = 404;
  res.end('no');
});
const sitePort = await freePort();
await new Promise((r) => site.listen(sitePort, '127.0.0.1', r));
const base = `http://127.0.0.1:${sitePort}`;
const taskFile = join(tmp, 'scale.crawl.yaml');
writeFileSync(
  taskFile,
  `name: scale
start: [${base}/]
request: { retries: { attempts: 1 } }
politeness: { perHost: { concurrency: 32, delay: 0 } }
rules:
  - name: list
    match: ["${base}/", "**/l/*"]
    follow:
      - { selector: 'a[href^="/l/"]', to: list }
      - { selector: 'a[href^="/f/"]', to: item }
  - name: item
    match: ["**/f/*", "**/w/*"]
`,
);

// Not spawnSync: this process serves the site the crawl fetches.
const sh = async (args, label) => {
  const t0 = performance.now();
  const child = spawn(process.execPath, [CLI, ...args], { cwd: tmp, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (err += d));
  const code = await new Promise((r) => child.once('exit', r));
  if (code !== 0) throw new Error(`${label} exited ${code}:\n${out}\n${err}`);
  return { out, s: (performance.now() - t0) / 1000 };
};
const timed = async (fn) => {
  const t0 = performance.now();
  const v = await fn();
  return { ms: performance.now() - t0, v };
};

const redis = await startRedis({ dir: join(tmp, 'redis') });
let monitor = null;
let browser = null;
try {
  const crawl = await sh(['run', taskFile, '--workers', '4', '--concurrency', '16', '--redis', redis.url], 'run');
  const failed = Number(/pages failed\s+([\d,]+)/.exec(crawl.out)?.[1]?.replace(/,/g, '') ?? 0);
  console.log(JSON.stringify({ seeded: 'failures', failed, seconds: crawl.s }));
  if (failed === 0) throw new Error(`the crawl failed no page:\n${crawl.out}`);
  const list = join(tmp, 'urls.txt');
  await new Promise((r) => {
    const w = createWriteStream(list);
    for (let i = 0; i < WAITING; i++) w.write(`${base}/w/${i}\n`);
    w.end(r);
  });
  const enq = await sh(['enqueue', taskFile, '--file', list, '--redis', redis.url], 'enqueue');
  console.log(
    JSON.stringify({ seeded: 'waiting', urls: WAITING, seconds: enq.s, said: enq.out.trim().split('\n').at(-1) }),
  );
  const status = JSON.parse((await sh(['status', taskFile, '--json', '--redis', redis.url], 'status')).out);
  const mem = await redisInfo(redis.port, 'memory');
  console.log(
    JSON.stringify({
      counts: status.counts,
      failed: status.stats.failed,
      redisMemoryMB: Math.round(Number(mem.used_memory) / 1e6),
    }),
  );

  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  monitor = spawn(process.execPath, [CLI, 'monitor', '--redis', redis.url, '--port', String(port)], {
    stdio: 'ignore',
    env: { ...process.env, CRAWL_STUDIO_MONITOR_TOKEN: 'bench' },
  });
  await waitForPort(port);
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
    ],
  });
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
  // A new tab: navigation, the page and its script, the API reads, the task's counters and failures drawn.
  const load = async (when) => {
    const page = await browser.newPage();
    const r = await timed(async () => {
      await page.goto(`${url}/#task=scale`);
      await page.locator('#task .card [data-figure="done"]').waitFor({ timeout: 60_000 });
      await page.locator('#failures').waitFor({ timeout: 60_000 });
    });
    const shown = await page.locator('#task .card [data-figure="waiting"]').textContent();
    await page.close();
    console.log(JSON.stringify({ load: when, ms: r.ms, waitingShown: shown }));
    return { when, ms: r.ms };
  };
  const loads = [];
  // The browser's floor on this machine now: a new tab loading a few bytes of text from the same server.
  const floor = async () => {
    const page = await browser.newPage();
    const r = await timed(() => page.goto(`${url}/healthcheck`));
    await page.close();
    console.log(JSON.stringify({ load: 'floor', ms: r.ms }));
    return { when: 'floor: a new tab loading /healthcheck', ms: r.ms };
  };
  // The first page of a monitor just started: nothing sampled yet (failed jobs, the store).
  loads.push(await load('cold: first after start'));
  // Loads in a row (the failure sample and the store read are at most 10 s old: reused).
  for (let i = 0; i < LOADS; i++) loads.push(await floor(), await load('warm'));
  // Loads 11 s apart: each one re-reads the failure sample and the store, as one poll in five does.
  for (let i = 0; i < LOADS; i++) {
    await sleep(11_000);
    loads.push(await load('stale: samples re-read'));
  }
  await sleep(11_000);
  const reads = [];
  for (const path of ['/api/tasks/scale', '/api/tasks/scale', '/api/tasks', '/api/workers', '/metrics', '/metrics']) {
    const r = await timed(async () => (await fetch(`${url}${path}`)).text());
    reads.push({ path, ms: r.ms, bytes: r.v.length });
    console.log(JSON.stringify(reads.at(-1)));
  }
  const ms = (x) => Math.round(x);
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  console.log(
    `\n${WAITING.toLocaleString('en-US')} waiting, ${failed.toLocaleString('en-US')} failed (${status.counts.failed.toLocaleString('en-US')} failed jobs kept), load average ${spawnSync('cat', ['/proc/loadavg'], { encoding: 'utf8' }).stdout.trim()}\n`,
  );
  console.log('| what | ms | |');
  console.log('| --- | ---: | --- |');
  for (const when of [
    'cold: first after start',
    'warm',
    'stale: samples re-read',
    'floor: a new tab loading /healthcheck',
  ]) {
    const xs = loads.filter((l) => l.when === when).map((l) => l.ms);
    console.log(`| page load, ${when} | median ${ms(median(xs))} | ${xs.map(ms).join(', ')} |`);
  }
  for (const r of reads)
    console.log(
      `| GET ${r.path}${r === reads[0] ? ' (samples stale)' : ''} | ${ms(r.ms)} | ${r.bytes.toLocaleString('en-US')} bytes |`,
    );
} finally {
  await browser?.close();
  monitor?.kill('SIGTERM');
  await redis.stop();
  site.close();
  rmSync(tmp, { recursive: true, force: true });
}
process.exit(0);
