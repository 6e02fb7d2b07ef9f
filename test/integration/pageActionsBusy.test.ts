import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadTaskFile } from '../../src/workspace/taskFile';
import { browserOrSkip } from '../support/browser';
import { bufferedPages, session } from '../support/crawl';
import { startRedis, type RedisServer } from '../support/services';

// An `evaluate:` page action whose script never yields (issue 30, item 7): the page fails with a bounded, named
// reason; the pages around it are rendered and stored; the worker goes on; and the busy renderer does not outlive its
// page (a spinning tab kept in the pool would burn a core for the rest of the run). Real Chromium, worker process.

const PLAIN = 4;

/** The site: `/hold` is answered only once `release()` is called, so the worker and its browser stay up till then. */
async function serve(): Promise<{ url: string; server: Server; release: () => void }> {
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  const server = createServer((req, res) => {
    const html = (s: string) =>
      res
        .writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
        .end(`<!doctype html><html><body>${s}</body></html>`);
    if (req.url === '/hold') return void released.then(() => html('<h1 class="title">held</h1>'));
    const m = /^\/(spin|plain)\/(\d+)$/.exec(req.url ?? '');
    if (m) return html(`<h1 class="title">${m[1]} ${m[2]}</h1>`);
    res.writeHead(404).end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server, release };
}

/** Every process under `roots` (the browsers' main processes): their renderers, GPU and utility processes. */
function descendants(roots: readonly number[]): number[] {
  const parent = new Map<number, number>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      // The fields after the command's closing parenthesis: state, then the parent's pid.
      parent.set(
        Number(name),
        Number(
          readFileSync(`/proc/${name}/stat`, 'utf8')
            .replace(/^.*\) /s, '')
            .split(' ')[1],
        ),
      );
    } catch {
      // Gone meanwhile.
    }
  }
  const out = new Set(roots.filter((r) => parent.has(r)));
  for (let grew = true; grew;) {
    grew = false;
    for (const [pid, ppid] of parent) {
      if (!out.has(ppid) || out.has(pid)) continue;
      out.add(pid);
      grew = true;
    }
  }
  return [...out];
}

/** A process that exists and is not a zombie (exited, waiting to be reaped). */
function alive(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /s, '')[0] !== 'Z';
  } catch {
    return false;
  }
}

/** Renderers among `pids` found running or runnable (state R) at every one of a few looks: spinning. */
async function spinning(pids: readonly number[]): Promise<number[]> {
  const renderers = pids.filter((pid) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('--type=renderer');
    } catch {
      return false;
    }
  });
  const running = new Map(renderers.map((p) => [p, 0]));
  const LOOKS = 5;
  for (let i = 0; i < LOOKS; i++) {
    for (const pid of renderers) {
      try {
        if (readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /s, '')[0] === 'R')
          running.set(pid, running.get(pid)! + 1);
      } catch {
        // Gone: not spinning.
      }
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return renderers.filter((p) => running.get(p) === LOOKS);
}

describe('an evaluate action that busy-loops (real Chromium, real Redis, worker process)', function () {
  this.timeout(180_000);
  let redis: RedisServer;
  let site: { url: string; server: Server; release: () => void };
  before(async function () {
    browserOrSkip(this);
    redis = await startRedis();
    site = await serve();
  });
  after(async () => {
    site?.server.closeAllConnections();
    site?.server.close();
    await redis?.stop();
  });

  it('fails the page with a bounded reason, renders the others, and leaves no spinning renderer or process behind', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cs-busy-'));
    mkdirSync(join(dir, 'scripts'));
    writeFileSync(join(dir, 'scripts', 'spin.js'), 'for (;;) {}\n');
    const plain = Array.from({ length: PLAIN }, (_, i) => `{ url: "${site.url}/plain/${i}", rule: plain }`).join(', ');
    writeFileSync(
      join(dir, 'task.crawl.yaml'),
      `name: busy-script
start: [{ url: "${site.url}/spin/0", rule: spin }, { url: "${site.url}/hold", rule: plain }, ${plain}]
request: { robots: false, retries: { attempts: 1 } }
rules:
  - name: spin
    browser: { timeout: 5s, actions: [ { evaluate: { file: scripts/spin.js, timeout: 1s } } ] }
    items: [{ type: page, key: [title], fields: { title: h1.title } }]
  - name: plain
    browser: { timeout: 90s }
    items: [{ type: page, key: [title], fields: { title: h1.title } }]
`,
    );
    const task = await loadTaskFile(join(dir, 'task.crawl.yaml'), { allowScripts: true });
    const log: string[] = [];
    const s = session(task, redis.url, {
      workers: 1,
      concurrency: 3,
      allowScripts: true,
      lockDurationMs: 30_000,
      stalledIntervalMs: 5_000,
      onWorkerLog: (_pid, line) => log.push(line),
    });
    let spinningAfter: number[] = [];
    let browserProcesses: number[] = [];
    // Once the busy page has failed (its cleanup done: the failure is logged after it), while the browser is still
    // up rendering the held page, nothing of the busy page may be running in it.
    const check = (async () => {
      while (!log.some((l) => /failed .*\/spin\/0/.test(l))) await new Promise((r) => setTimeout(r, 100));
      const roots = [...log.join('\n').matchAll(/browser \d+ started \(.*, pid (\d+)\)/g)].map((m) => Number(m[1]));
      browserProcesses = descendants(roots);
      spinningAfter = await spinning(browserProcesses);
      site.release();
    })();
    let result;
    try {
      result = await s.run();
      await check;
    } finally {
      site.release();
      await s.close();
    }
    const text = log.join('\n');
    const stats = result.status.stats!;
    assert.equal(stats.failed, 1, text);
    const [reason] = Object.keys(stats.failures);
    // The action's own timeout ends it (its cleanup bounded too); on a machine too loaded for that, the render's
    // hung deadline does, and the browser is replaced. Either is bounded and says so.
    assert.ok(reason === 'action' || reason === 'browser-hung', `a bounded reason, not ${reason}:\n${text}`);
    if (reason === 'action')
      assert.match(
        text,
        /failed .*\/spin\/0 .*browser\.actions\[0\] \(evaluate scripts\/spin\.js\): timed out after 1000 ms/,
      );
    assert.equal(stats.done, PLAIN + 1, `every other page rendered:\n${text}`);
    const titles = (await bufferedPages(redis.url, 'busy-script'))
      .flatMap((p) => p.items.map((i) => String(i.data.title)))
      .sort();
    assert.deepEqual(titles, ['held', ...Array.from({ length: PLAIN }, (_, i) => `plain ${i}`)]);
    assert.ok(browserProcesses.length > 0, `the worker's browser was seen:\n${text}`);
    assert.deepEqual(spinningAfter, [], `no renderer still spinning once the page failed:\n${text}`);
    // Killed processes may take a moment to exit (and stay zombies, not running, until reaped).
    for (let i = 0; i < 100 && browserProcesses.some(alive); i++) await new Promise((r) => setTimeout(r, 100));
    assert.deepEqual(browserProcesses.filter(alive), [], "no process of the worker's browsers left once it stopped");
  });
});
