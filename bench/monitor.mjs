// The web monitor's cost (issue 31): Redis CPU (INFO cpu) during a crawl of ~10,500 pages with 4 workers, without
// and with the monitor watching it (its page open in Chromium, polling every 2 s, and /metrics scraped every 5 s),
// and the page's load time (navigation to the task's counters drawn) during and after the crawl.
// Run after `node esbuild.mjs` (it measures dist/, which holds the monitor's page script):
//   node bench/monitor.mjs [--lists 500] [--rounds 2] [--chromium /usr/bin/chromium]
// Numbers as JSON lines, then a Markdown table. The site is served by this process (node:http), the same in both
// modes; Redis has the bench's settings (lib/services.mjs). Timings are never asserted.
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, redisInfo, commandCalls, startRedis, waitForPort } from './lib/services.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const arg = (name, dflt) => (process.argv.includes(name) ? process.argv[process.argv.indexOf(name) + 1] : dflt);
const LISTS = Number(arg('--lists', '500'));
const PER = 20;
const ROUNDS = Number(arg('--rounds', '2'));
const CHROMIUM = arg('--chromium', '/usr/bin/chromium');
const CLI = join(root, 'dist', 'cli.js');
const { chromium } = createRequire(join(root, 'package.json'))('playwright-core');
const tmp = '/dev/shm/cs-monitor-bench';
rmSync(tmp, { recursive: true, force: true });
mkdirSync(tmp, { recursive: true });

// A site of LISTS list pages, each linking to the next and to PER item pages (~1.5 KB each).
const filler = `<p>${'lorem ipsum dolor sit amet '.repeat(40)}</p>`;
const site = createServer((req, res) => {
  res.setHeader('content-type', 'text/html');
  const list = /^\/(?:l\/(\d+))?$/.exec(req.url);
  if (list) {
    const i = Number(list[1] ?? 0);
    const links = Array.from({ length: PER }, (_, j) => `<a class="item" href="/b/${i}-${j}">item ${i}-${j}</a>`).join(
      '',
    );
    return res.end(
      `<h1>list ${i}</h1>${links}${i + 1 < LISTS ? `<a class="next" href="/l/${i + 1}">next</a>` : ''}${filler}`,
    );
  }
  if (req.url === '/robots.txt') return res.end('');
  const item = /^\/b\/(\d+-\d+)$/.exec(req.url);
  if (item) return res.end(`<h1>item ${item[1]}</h1><span class="price">${item[1].length}</span>${filler}`);
  res.statusCode = 404;
  res.end('no');
});
const sitePort = await freePort();
await new Promise((r) => site.listen(sitePort, '127.0.0.1', r));
const base = `http://127.0.0.1:${sitePort}`;
const taskFile = join(tmp, 'bench.crawl.yaml');
writeFileSync(
  taskFile,
  `name: bench
start: [${base}/]
politeness: { perHost: { concurrency: 16, delay: 0 } }
rules:
  - name: list
    match: ["${base}/", "**/l/*"]
    follow:
      - { selector: "a.next", to: list }
      - { selector: "a.item", to: item }
  - name: item
    match: ["**/b/*"]
    items:
      - type: item
        key: [name]
        fields: { name: h1, price: .price }
`,
);

const cpuOf = (info) => Number(info.used_cpu_sys) + Number(info.used_cpu_user);
const calls = (i) => Object.values(commandCalls(i)).reduce((a, b) => a + b, 0);
const IDLE_MS = 30_000;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function pageLoad(browser, url) {
  const page = await browser.newPage();
  const t0 = performance.now();
  await page.goto(url);
  await page.locator('#task .card [data-figure="done"]').waitFor({ timeout: 60_000 });
  const ms = performance.now() - t0;
  await page.close();
  return ms;
}

async function crawl(mode, round) {
  const redis = await startRedis({ dir: join(tmp, `redis-${mode}-${round}`) });
  let monitor = null;
  let browser = null;
  let watching = null;
  const loads = [];
  let scrapes = 0;
  let idle = null;
  let monitorUrl = '';
  try {
    const before = await redisInfo(redis.port);
    const t0 = Date.now();
    const run = spawn(
      process.execPath,
      [CLI, 'run', taskFile, '--workers', '4', '--concurrency', '4', '--redis', redis.url, '--fresh'],
      { stdio: ['ignore', 'pipe', 'pipe'], cwd: tmp },
    );
    let out = '';
    run.stdout.on('data', (d) => (out += d));
    run.stderr.on('data', (d) => (out += d));
    const ended = new Promise((r) => run.once('exit', r));
    let stop = false;
    if (mode === 'monitor') {
      const port = await freePort();
      monitor = spawn(process.execPath, [CLI, 'monitor', '--redis', redis.url, '--port', String(port)], {
        stdio: 'ignore',
        env: { ...process.env, CRAWL_STUDIO_MONITOR_TOKEN: 'bench' },
      });
      await waitForPort(port);
      monitorUrl = `http://127.0.0.1:${port}`;
      const url = `${monitorUrl}/#task=bench`;
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
      // Wait for the task to exist, then keep its page open (it polls every 2 s) and scrape /metrics every 5 s.
      while (!(await (await fetch(`http://127.0.0.1:${port}/api/tasks`)).json()).tasks.length) await sleep(100);
      const page = await browser.newPage();
      await page.goto(url);
      watching = (async () => {
        let n = 0;
        while (!stop) {
          await sleep(1000);
          if (++n % 5 === 0)
            await fetch(`http://127.0.0.1:${port}/metrics`)
              .then((r) => r.text())
              .then(() => scrapes++);
          if (n === 8 || n === 16) loads.push({ when: 'during the crawl', ms: await pageLoad(browser, url) });
        }
      })();
      await ended;
      stop = true;
      await watching;
      for (let i = 0; i < 3; i++) loads.push({ when: 'finished crawl', ms: await pageLoad(browser, url) });
    } else await ended;
    const wallMs = Date.now() - t0;
    const after = await redisInfo(redis.port);
    if (mode === 'monitor') {
      // The monitor's own share, apart from the crawl: Redis CPU over IDLE_MS with the page open (polling) and
      // /metrics scraped, then over IDLE_MS with no monitor, on the same Redis holding the finished crawl.
      const a = await redisInfo(redis.port);
      stop = false;
      const scraping = (async () => {
        for (let n = 1; !stop; n++) {
          await sleep(1000);
          if (n % 5 === 0) await fetch(`${monitorUrl}/metrics`).then((r) => r.text());
        }
      })();
      await sleep(IDLE_MS);
      stop = true;
      await scraping;
      const b = await redisInfo(redis.port);
      await browser.close();
      browser = null;
      monitor.kill('SIGTERM');
      await sleep(IDLE_MS);
      const c = await redisInfo(redis.port);
      idle = {
        watchedMsPerS: ((cpuOf(b) - cpuOf(a)) * 1e6) / IDLE_MS,
        unwatchedMsPerS: ((cpuOf(c) - cpuOf(b)) * 1e6) / IDLE_MS,
        watchedCommands: calls(b) - calls(a),
        unwatchedCommands: calls(c) - calls(b),
      };
    }
    const pages = Number(/pages fetched\s+([\d,]+)/.exec(out)?.[1]?.replace(/,/g, '') ?? 0);
    return {
      mode,
      round,
      pages,
      wallMs,
      redisCpuS: cpuOf(after) - cpuOf(before),
      redisCommands: calls(after) - calls(before),
      scrapes,
      loads,
      idle,
    };
  } finally {
    await browser?.close();
    monitor?.kill('SIGTERM');
    await redis.stop();
  }
}

const rows = [];
for (let round = 0; round < ROUNDS; round++) {
  for (const mode of round % 2 === 0 ? ['off', 'monitor'] : ['monitor', 'off']) {
    spawnSync('sync');
    const r = await crawl(mode, round);
    console.log(JSON.stringify(r));
    rows.push(r);
  }
}
site.close();
rmSync(tmp, { recursive: true, force: true });

const fmt = (n, d = 2) => n.toFixed(d);
console.log(
  '\n| round | monitor | pages | wall s | pages/s | Redis CPU s | Redis CPU ms / 1,000 pages | Redis commands | page load ms (during; after) |',
);
console.log('| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |');
for (const r of rows) {
  const during = r.loads
    .filter((l) => l.when === 'during the crawl')
    .map((l) => Math.round(l.ms))
    .join(', ');
  const after = r.loads
    .filter((l) => l.when === 'finished crawl')
    .map((l) => Math.round(l.ms))
    .join(', ');
  console.log(
    `| ${r.round} | ${r.mode === 'monitor' ? 'watching' : 'none'} | ${r.pages} | ${fmt(r.wallMs / 1000, 1)} | ${Math.round((r.pages * 1000) / r.wallMs)} | ${fmt(r.redisCpuS)} | ${fmt((r.redisCpuS * 1e6) / Math.max(1, r.pages), 0)} | ${r.redisCommands} | ${r.mode === 'monitor' ? `${during}; ${after}` : ''} |`,
  );
}
const per = (mode) => rows.filter((r) => r.mode === mode).map((r) => r.redisCpuS / Math.max(1, r.pages));
const best = (xs) => Math.min(...xs);
console.log(
  `\nRedis CPU per page, best of ${ROUNDS}: none ${fmt(best(per('off')) * 1e6, 1)} µs, watching ${fmt(best(per('monitor')) * 1e6, 1)} µs: ${fmt((best(per('monitor')) / best(per('off')) - 1) * 100, 1)} % more.`,
);
for (const r of rows.filter((x) => x.idle)) {
  const offRates = rows.filter((x) => x.mode === 'off').map((x) => (x.redisCpuS * 1e6) / x.wallMs);
  const crawlMsPerS = offRates.reduce((a, b) => a + b, 0) / offRates.length;
  console.log(
    `round ${r.round}: Redis CPU with the crawl finished: ${fmt(r.idle.watchedMsPerS, 2)} ms/s watched (${r.idle.watchedCommands} commands in ${IDLE_MS / 1000} s), ${fmt(r.idle.unwatchedMsPerS, 2)} ms/s not (${r.idle.unwatchedCommands}); the monitor's ${fmt(r.idle.watchedMsPerS - r.idle.unwatchedMsPerS, 2)} ms/s is ${fmt(((r.idle.watchedMsPerS - r.idle.unwatchedMsPerS) / crawlMsPerS) * 100, 2)} % of the crawl's ${fmt(crawlMsPerS, 1)} ms/s (mean of the unwatched runs).`,
  );
}
process.exit(0);
