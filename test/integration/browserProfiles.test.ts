import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { descendants } from '../../src/worker/browser/processes';
import { profileDirOf } from '../../src/worker/browser/profiles';
import { startRedis, type RedisServer } from '../support/services';
import { bufferedPages, session, writeTask } from '../support/crawl';
import { browserOrSkip } from '../support/browser';

// No leftovers after a kill (issue 30, item 6): a worker rendering pages in a real Chromium is killed with SIGKILL;
// its browser's temporary profile directory cannot be removed by it, and the worker started in its place removes it
// (and the browser still running in it, if any). The crawl still ends with every page stored.

interface Site {
  readonly url: string;
  readonly server: Server;
  /** Requests for /hold that are waiting for an answer. */
  readonly held: { count: number };
}

async function serve(): Promise<Site> {
  const held = { count: 0 };
  let holdRequests = 0;
  const server = createServer((req, res) => {
    const html = (s: string) =>
      res
        .writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
        .end(`<!doctype html><html><body>${s}</body></html>`);
    if (req.url === '/hold') {
      // The first request is answered only once its connection is gone (its worker killed): a page in flight.
      if (++holdRequests === 1) {
        held.count++;
        res.on('close', () => held.count--);
        return;
      }
      return html('<h1 class="title">held</h1>');
    }
    const m = /^\/item\/(\d+)$/.exec(req.url ?? '');
    if (m) return html(`<h1 class="title">item ${m[1]}</h1>`);
    res.writeHead(404).end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server, held };
}

/** The profile directories of the browsers running under `pid`. */
function profilesUnder(pid: number): string[] {
  const dirs = descendants(pid)
    .map((p) => profileDirOf(p.pid))
    .filter((d): d is string => d !== null && d.startsWith(tmpdir()));
  return [...new Set(dirs)];
}

/** Processes still running with `dir` as their profile. */
function browsersIn(dir: string): number[] {
  return readdirSync('/proc')
    .filter((n) => /^\d+$/.test(n))
    .map(Number)
    .filter((pid) => profileDirOf(pid) === dir);
}

describe('browser profile folders after a killed worker (real Chromium, real Redis and worker processes)', function () {
  this.timeout(180_000);
  let redis: RedisServer;
  let site: Site;
  let ownTmp: string | undefined;
  const tmpBefore = process.env.TMPDIR;
  before(async function () {
    browserOrSkip(this);
    // A temp folder of this file's own, for its workers and their browsers: a worker of another test file running
    // beside it (mocha --parallel) sweeps the temp folder too, and could remove the killed worker's profile before
    // the worker this test watches gets to.
    ownTmp = mkdtempSync(join(tmpdir(), 'cs-profiles-'));
    process.env.TMPDIR = ownTmp;
    redis = await startRedis();
    site = await serve();
  });
  after(async () => {
    site?.server.closeAllConnections();
    site?.server.close();
    await redis?.stop();
    if (tmpBefore === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = tmpBefore;
    if (ownTmp) rmSync(ownTmp, { recursive: true, force: true });
  });

  it('removes the profile of a browser whose worker was killed with SIGKILL, when the next worker starts', async () => {
    const task = await writeTask(`name: profiles
start: [{ url: "${site.url}/hold", rule: page }, ${[1, 2, 3].map((i) => `{ url: "${site.url}/item/${i}", rule: page }`).join(', ')}]
request: { robots: false }
rules:
  - name: page
    browser: { timeout: 60s }
    items: [{ type: page, key: [title], fields: { title: h1.title } }]
`);
    const log: string[] = [];
    const s = session(task, redis.url, {
      workers: 1,
      concurrency: 2,
      restartOnCrash: true,
      onWorkerLog: (_pid, line) => log.push(line),
    });
    const exits: string[] = [];
    s.supervisor.on('exit', (_pid, _code, signal, expected) => {
      if (!expected) exits.push(String(signal));
    });
    const running = s.run();
    running.catch(() => undefined);
    let killed: { pid: number; dirs: string[] } | null = null;
    try {
      // Killed while it renders: /hold is in flight in its browser.
      for (let i = 0; !killed && i < 1_200; i++) {
        const w = s.workers()[0];
        const dirs = w ? profilesUnder(w.pid) : [];
        if (w && site.held.count === 1 && dirs.length > 0) {
          killed = { pid: w.pid, dirs };
          s.supervisor.kill(w.pid, 'SIGKILL');
        } else await sleep(50);
      }
      assert.ok(killed, `the worker rendered /hold in a browser:\n${log.join('\n')}`);
      const result = await running;
      assert.deepEqual(exits, ['SIGKILL']);
      assert.equal(result.status.stats!.failed, 0, log.join('\n'));
      const titles = (await bufferedPages(redis.url, 'profiles'))
        .flatMap((p) => p.items.map((it) => String(it.data.title)))
        .sort();
      assert.deepEqual(
        [...new Set(titles)],
        ['held', 'item 1', 'item 2', 'item 3'],
        'every page stored, /hold after the kill',
      );
    } finally {
      await s.close();
    }
    for (const dir of killed.dirs) {
      assert.deepEqual(browsersIn(dir), [], `no browser of the killed worker still runs in ${dir}`);
      assert.ok(!existsSync(dir), `the killed worker's profile ${dir} was removed:\n${log.join('\n')}`);
    }
    assert.ok(
      log.some((l) => /removed \d+ browser profile folder\(s\) left by workers that died/.test(l)),
      log.join('\n'),
    );
  });
});
