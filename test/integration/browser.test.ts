import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { readScreenshot, screenshotUrls } from '../../src/observe/screenshots';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { descendants } from '../../src/worker/browser/processes';
import { BROWSER_PATH_ENV } from '../../src/worker/browser/executable';
import { BROWSER_ARGS_ENV } from '../../src/worker/browser/pool';
import { startRedis, type RedisServer } from '../support/services';
import { bufferedPages, session, writeTask } from '../support/crawl';
import { browserOrSkip } from '../support/browser';

// Pages that need a browser (issue 18): real Chromium (Debian's), real redis-server, real worker processes from
// dist/worker.js. The site's items exist only once its scripts ran: a plain fetch of it stores nothing.

const ITEMS = ['alpha', 'beta', 'gamma', 'delta', 'epsilon'];

/** A page whose body is built by its script, after a delay (so `load` alone may come too early). */
function scripted(body: string, script: string): string {
  return `<!doctype html><html><head><title>t</title></head><body>${body}<script>setTimeout(() => { ${script} }, 100);</script></body></html>`;
}

interface Site {
  readonly url: string;
  readonly hits: Map<string, number>;
  close(): Promise<void>;
}

/** A second local server: a private address the crawled site's pages must not reach. */
let otherUrl = '';

async function serve(): Promise<Site> {
  const hits = new Map<string, number>();
  const server: Server = createServer((req, res) => {
    const path = req.url ?? '/';
    const n = (hits.get(path) ?? 0) + 1;
    hits.set(path, n);
    const html = (s: string) => {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end(s);
    };
    if (path === '/robots.txt')
      return res.writeHead(200, { 'content-type': 'text/plain' }).end('User-agent: *\nDisallow: /private/\n');
    if (path === '/') {
      const links = ITEMS.map((name) => `<li class="item"><a href="/item/${name}">${name}</a></li>`).join('');
      return html(
        scripted('<ul id="list"></ul>', `document.getElementById('list').innerHTML = ${JSON.stringify(links)};`),
      );
    }
    const item = /^\/item\/(\w+)$/.exec(path);
    if (item)
      return html(
        scripted(
          '<main></main>',
          `document.querySelector('main').innerHTML = '<h1 class="title">' + ${JSON.stringify(item[1])} + '</h1>';`,
        ),
      );
    // Never ready: its script keeps working and never adds what the rule waits for.
    if (path === '/spin')
      return html(scripted('<p>loading…</p>', `setInterval(() => { document.body.append('.'); }, 50);`));
    // The first visit exhausts the renderer's memory (the renderer dies, the browser must be replaced); the retry is fine.
    if (path === '/crash') {
      if (n === 1)
        return html(
          `<!doctype html><body><script>const a = []; for (;;) a.push(new Array(1e6).fill(Math.random()));</script></body>`,
        );
      return html(
        scripted('<main></main>', `document.querySelector('main').innerHTML = '<h1 class="title">survivor</h1>';`),
      );
    }
    // Navigates away as it loads: the items are on the page it goes to.
    if (path === '/away') return html(`<!doctype html><body><script>location.replace('/landing');</script></body>`);
    // Asks for an image (blocked by default) and for a page on another local port (a private address that is not a
    // start host): neither request may leave the browser.
    if (path === '/greedy') {
      return html(
        scripted(
          `<img src="/pixel.png"><main></main>`,
          `fetch(${JSON.stringify(otherUrl)} + '/secret').catch(() => {}).finally(() => { document.querySelector('main').innerHTML = '<h1 class="title">greedy</h1>'; });`,
        ),
      );
    }
    if (path === '/landing')
      return html(
        scripted('<main></main>', `document.querySelector('main').innerHTML = '<h1 class="title">landed</h1>';`),
      );
    // What one page leaves in its browser context and tab (a cookie its response set, one its script set, local and
    // session storage, the window's name) must not be there for the next: the title says what the page was sent and
    // found.
    if (path.startsWith('/fresh/')) {
      const sent = req.headers.cookie ?? '';
      res.writeHead(200, { 'content-type': 'text/html', 'set-cookie': 'srv=1; Path=/' });
      return res.end(
        scripted(
          '<main></main>',
          `const found = [${JSON.stringify(sent)}, localStorage.getItem('seen') || '', sessionStorage.getItem('seen') || '', window.name].filter(Boolean).join(' ') || 'nothing'; localStorage.setItem('seen', 'local'); sessionStorage.setItem('seen', 'session'); window.name = 'named'; document.cookie = 'js=1; path=/'; document.querySelector('main').innerHTML = '<h1 class="title">' + location.pathname + ': ' + found + '</h1>';`,
        ),
      );
    }
    // Pages that leave for somewhere the task does not crawl, each its own way: none may be extracted as itself.
    const elsewhere = 'http://offsite.example/landing';
    if (path === '/to-offsite')
      return html(
        scripted('<main><h1 class="title">not yet</h1></main>', `location.href = ${JSON.stringify(elsewhere)};`),
      );
    if (path === '/meta-offsite')
      return html(
        `<!doctype html><head><meta http-equiv="refresh" content="0;url=${elsewhere}"></head><body><h1 class="title">not yet</h1></body>`,
      );
    if (path === '/to-disallowed')
      return html(scripted('<main><h1 class="title">not yet</h1></main>', `location.replace('/private/landing');`));
    if (path === '/private/landing') return html('<!doctype html><body><h1 class="title">disallowed</h1></body>');
    if (path === '/302-offsite') return res.writeHead(302, { location: elsewhere }).end();
    // To a private address (the other local server, not a start host): by a server redirect, and from a script
    // that reads a redirect's answer into the page.
    if (path === '/302-private') return res.writeHead(302, { location: `${otherUrl}/secret` }).end();
    if (path === '/bounce') return res.writeHead(302, { location: `${otherUrl}/secret` }).end();
    if (path === '/leak') {
      return html(
        scripted(
          '<main></main>',
          `fetch('/bounce').then((r) => r.text(), () => 'refused').then((t) => { document.querySelector('main').innerHTML = '<h1 class="title">' + t + '</h1>'; });`,
        ),
      );
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    hits,
    close: () =>
      new Promise((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

function task(
  site: Site,
  name: string,
  start: string,
  extra = '',
  rule = 'browser: { waitFor: { selector: .title }, timeout: 5s }',
): string {
  return `name: ${name}
start: [{ url: "${site.url}${start}", rule: ${start === '/' ? 'list' : 'item'} }]
request: { timeout: 5s, retries: { attempts: 2, backoff: fixed, delay: 100ms } }
${extra}
rules:
  - name: list
    browser: { waitFor: { selector: li.item }, timeout: 5s }
    follow:
      - selector: li.item a
        to: item
  - name: item
    ${rule}
    items:
      - type: thing
        key: [title]
        fields:
          title: h1.title
`;
}

/** Every process below the given worker processes: a worker's only children are its browsers. */
function chromiumBelow(pids: readonly number[]): number[] {
  return pids.flatMap((pid) => descendants(pid).map((p) => p.pid));
}

/** Running, or exited and not yet reaped by anyone (a zombie is alive to kill(0) but holds nothing). */
function alive(pid: number): boolean {
  try {
    return !/^\S+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

describe('pages rendered in a browser (real Chromium, real Redis, worker processes)', function () {
  this.timeout(120_000);
  let redis: RedisServer;
  let site: Site;

  before(function () {
    browserOrSkip(this);
  });
  beforeEach(async () => {
    redis = await startRedis();
    site = await serve();
  });
  afterEach(async () => {
    delete process.env[BROWSER_ARGS_ENV];
    await site?.close();
    await redis?.stop();
  });

  /** Runs a task with one worker; the Chromium processes seen under it, and its log. */
  async function crawl(yaml: string) {
    const t = await writeTask(yaml);
    const log: string[] = [];
    const seen = new Set<number>();
    const s = session(t, redis.url, {
      workers: 1,
      concurrency: 4,
      // No worker is killed here: the default lock, so that on a busy machine (Chromium starting on a loaded CPU) a
      // lock renewed late never hands a page to a second attempt and the counts stay exact.
      lockDurationMs: 30_000,
      stalledIntervalMs: 5_000,
      onWorkerLog: (_pid, line) => log.push(line),
      onProgress: () => {
        for (const pid of chromiumBelow(s.workers().map((w) => w.pid))) seen.add(pid);
      },
    });
    const result = await s.run();
    await s.close();
    const pages = await bufferedPages(redis.url, t.name);
    const titles = pages.flatMap((p) => p.items.map((i) => String(i.data.title))).sort();
    return { result, log, seen, pages, titles };
  }

  it('stores the items a script builds, and the browser dies with its worker', async () => {
    const { result, titles, seen, log } = await crawl(task(site, 'rendered', '/'));
    assert.deepEqual(titles, [...ITEMS].sort());
    assert.equal(result.status.stats!.done, 1 + ITEMS.length);
    assert.equal(result.status.stats!.failed, 0);
    assert.ok(seen.size > 0, 'Chromium ran under the worker');
    assert.equal(log.filter((l) => /browser \d+ started/.test(l)).length, 1, 'one browser for the whole crawl');
    // The renderers exit a moment after their browser: given a few seconds, none may be left.
    let left = [...seen].filter(alive);
    for (let i = 0; i < 50 && left.length > 0; i++) {
      await new Promise((r) => setTimeout(r, 200));
      left = left.filter(alive);
    }
    assert.deepEqual(left, [], 'no Chromium process outlives the worker');
  });

  it('fails a page that never becomes ready as a timeout, after its retries', async () => {
    const { result, titles } = await crawl(
      task(site, 'spin', '/spin', '', 'browser: { waitFor: { selector: .title }, timeout: 1s }'),
    );
    assert.deepEqual(titles, []);
    assert.equal(site.hits.get('/spin'), 2, 'tried twice (request.retries.attempts)');
    assert.equal(result.status.stats!.failed, 1);
    assert.deepEqual(result.status.stats!.failures, { timeout: 1 });
  });

  it('replaces a browser whose renderer crashed and retries the page on the new one', async () => {
    // A small V8 heap, so the allocating page kills its renderer within a second rather than after gigabytes.
    process.env[BROWSER_ARGS_ENV] = '--js-flags=--max-old-space-size=32';
    const { result, titles, log } = await crawl(task(site, 'crash', '/crash'));
    assert.deepEqual(titles, ['survivor']);
    assert.equal(site.hits.get('/crash'), 2);
    assert.equal(result.status.stats!.failed, 0);
    assert.ok(
      log.some((l) => /browser 1 replaced: the page crashed/.test(l)),
      log.join('\n'),
    );
    assert.ok(
      log.some((l) => /browser 2 started/.test(l)),
      log.join('\n'),
    );
  });

  it('extracts from the page a script navigated to', async () => {
    const { titles, pages } = await crawl(task(site, 'away', '/away'));
    assert.deepEqual(titles, ['landed']);
    assert.equal(site.hits.get('/landing'), 1);
    assert.equal(pages[0]!.url, `${site.url}/away`);
  });

  it('keeps a rendered page from blocked resource types and from private addresses', async () => {
    const otherHits: string[] = [];
    const other = createServer((req, res) => {
      otherHits.push(req.url ?? '');
      res.writeHead(200, { 'access-control-allow-origin': '*' }).end('secret');
    });
    await new Promise<void>((r) => other.listen(0, '127.0.0.1', r));
    otherUrl = `http://127.0.0.1:${(other.address() as AddressInfo).port}`;
    try {
      const { titles } = await crawl(task(site, 'greedy', '/greedy'));
      assert.deepEqual(titles, ['greedy'], 'the page rendered');
      assert.equal(site.hits.get('/pixel.png'), undefined, 'images are blocked by default');
      assert.deepEqual(otherHits, [], 'no request reached the private address');
    } finally {
      other.closeAllConnections();
      other.close();
    }
  });

  it('skips a page that navigates out of scope or against robots.txt, by script, meta refresh or redirect, without extracting it', async () => {
    const starts = ['/to-offsite', '/meta-offsite', '/to-disallowed', '/302-offsite', '/away'];
    const yaml = task(site, 'leaving', '/item/x').replace(
      /^start: .*$/m,
      `start: [${starts.map((p) => `{ url: "${site.url}${p}", rule: item }`).join(', ')}]`,
    );
    const { titles, result, log } = await crawl(yaml);
    // Only the page that stayed on the site (/away lands on /landing) is extracted.
    assert.deepEqual(titles, ['landed'], log.join('\n'));
    const stats = result.status.stats!;
    assert.equal(stats.failed, 0, JSON.stringify(stats.failures));
    assert.deepEqual(stats.skipped, { 'navigated-offsite': 3, 'navigated-robots-txt': 1 }, log.join('\n'));
    assert.equal(site.hits.get('/private/landing'), undefined, 'the disallowed page was never requested');
    assert.ok(
      log.some((l) =>
        l.includes('the page navigated to http://offsite.example/landing, which is not crawled (offsite)'),
      ),
      log.join('\n'),
    );
  });

  it('refuses private addresses on every hop: a redirect of the page, and a redirect a script reads', async () => {
    const otherHits: string[] = [];
    const other = createServer((req, res) => {
      otherHits.push(req.url ?? '');
      res.writeHead(200, { 'access-control-allow-origin': '*', 'content-type': 'text/html' }).end('secret');
    });
    await new Promise<void>((r) => other.listen(0, '127.0.0.1', r));
    otherUrl = `http://127.0.0.1:${(other.address() as AddressInfo).port}`;
    try {
      const yaml = task(site, 'hops', '/item/x').replace(
        /^start: .*$/m,
        `start: [{ url: "${site.url}/302-private", rule: item }, { url: "${site.url}/leak", rule: item }]`,
      );
      const { titles, result, log } = await crawl(yaml);
      assert.deepEqual(otherHits, [], 'no request reached the private address');
      assert.deepEqual(titles, ['refused'], 'the script got no answer from it');
      assert.deepEqual(result.status.stats!.failures, { blocked: 1 }, log.join('\n'));
      assert.ok(
        log.some((l) => new RegExp(`${new URL(otherUrl).host} resolves to a private address`).test(l)),
        log.join('\n'),
      );
    } finally {
      other.closeAllConnections();
      other.close();
    }
  });

  it('keeps a screenshot of a rendered page that failed, when its rule asks, and the CLI lists and saves it', async () => {
    // /spin never gets its title (a 1 s timeout); /item/alpha does, with time to spare on a busy machine. Both rules
    // keep screenshots of failures.
    const yaml = task(
      site,
      'shots',
      '/spin',
      '',
      'browser: { waitFor: { selector: .title }, timeout: 1s, screenshot: failure }',
    )
      .replace(
        /^start: .*$/m,
        `start: [{ url: "${site.url}/spin", rule: item }, { url: "${site.url}/item/alpha", rule: ok }]`,
      )
      .replace(
        'rules:\n',
        'rules:\n  - name: ok\n    browser: { waitFor: { selector: .title }, timeout: 20s, screenshot: failure }\n    items: [{ type: thing, key: [title], fields: { title: h1.title } }]\n',
      );
    const { titles, result } = await crawl(yaml);
    assert.deepEqual(titles, ['alpha'], 'the page that rendered was extracted as usual');
    const run = result.status.run!.run;
    const r = new Redis(redis.url);
    try {
      assert.deepEqual(
        await screenshotUrls(r, 'shots', run),
        [`${site.url}/spin`],
        'only the page that failed, once (its two attempts share one)',
      );
      const shot = (await readScreenshot(r, 'shots', run, `${site.url}/spin`))!;
      assert.equal(shot.jpeg.subarray(0, 3).toString('hex'), 'ffd8ff', 'a JPEG');
      assert.ok(shot.jpeg.byteLength > 1_000 && shot.jpeg.byteLength < 512 * 1024, `${shot.jpeg.byteLength} bytes`);
      assert.match(shot.facts.why, /render timed out after 1000 ms, waiting for '.title'/);
    } finally {
      r.disconnect();
    }
    const cli = resolve('dist/cli.js');
    const file = (await writeTask(yaml)).file;
    const listed = await promisify(execFile)(process.execPath, [cli, 'screenshot', file, '--redis', redis.url]);
    assert.match(listed.stdout, new RegExp(`${site.url}/spin  render timed out`));
    const out = join(mkdtempSync(join(tmpdir(), 'cs-shot-')), 'spin.jpg');
    await promisify(execFile)(process.execPath, [
      cli,
      'screenshot',
      file,
      `${site.url}/spin`,
      '--out',
      out,
      '--redis',
      redis.url,
    ]);
    assert.equal(readFileSync(out).subarray(0, 3).toString('hex'), 'ffd8ff');
    const saved = await promisify(execFile)(process.execPath, [
      cli,
      'screenshot',
      file,
      `${site.url}/spin`,
      '--redis',
      redis.url,
    ]);
    const path = saved.stdout.split('  ')[0]!;
    assert.ok(path.includes(join('.crawl', 'screenshots', 'shots')) && existsSync(path), saved.stdout);
    await assert.rejects(
      promisify(execFile)(process.execPath, [cli, 'screenshot', file, `${site.url}/item/alpha`, '--redis', redis.url]),
      /no screenshot of .*\/item\/alpha/,
    );
  });

  it('starts every page afresh, though its browser context served the page before', async () => {
    const yaml = task(site, 'fresh', '/item/x', 'politeness: { perHost: { concurrency: 1 } }').replace(
      /^start: .*$/m,
      `start: [${[1, 2, 3].map((n) => `{ url: "${site.url}/fresh/${n}", rule: item }`).join(', ')}]`,
    );
    const { titles, log } = await crawl(yaml);
    assert.deepEqual(titles, ['/fresh/1: nothing', '/fresh/2: nothing', '/fresh/3: nothing'], log.join('\n'));
  });

  it('never starts a browser for a task without browser rules', async () => {
    const { titles, seen, log, result } = await crawl(task(site, 'plain', '/item/alpha', '', '# no browser'));
    // The title is built by script: fetched, the page has none, which is what proves nothing rendered it.
    assert.deepEqual(titles, []);
    assert.equal(result.status.stats!.done, 1);
    assert.deepEqual([...seen], [], 'no process under the worker');
    assert.ok(!log.some((l) => /browser/.test(l)), log.join('\n'));
  });

  it('stops a run that needs a browser, when there is none, with one message saying how to get one', async () => {
    const saved = process.env[BROWSER_PATH_ENV];
    process.env[BROWSER_PATH_ENV] = '/nonexistent/chromium';
    try {
      const t = await writeTask(task(site, 'nobrowser', '/'));
      const s = session(t, redis.url, { workers: 1 });
      await assert.rejects(
        s.run(),
        /the browser '\/nonexistent\/chromium' is not an executable file.*apt-get install chromium.*--browser PATH/s,
      );
      await s.close();
      assert.equal(site.hits.size, 0, 'nothing was fetched');
    } finally {
      if (saved === undefined) delete process.env[BROWSER_PATH_ENV];
      else process.env[BROWSER_PATH_ENV] = saved;
    }
  });
});
