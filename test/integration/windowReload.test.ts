import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Redis } from 'ioredis';
import { serveSite, type SiteServer } from '../../src/demo/site';
import { partitionKeys, WORKERS_KEY } from '../../src/frontier/keys';
import { workerIdOf } from '../../src/frontier/fleet';
import { launchCrawl } from '../../src/run/launcher';
import { loadTaskFile } from '../../src/workspace/taskFile';
import { startRedis, type RedisServer } from '../support/services';
import { WORKER_SCRIPT } from '../support/crawl';
import { demoShopTask } from '../support/demoTask';
import { until } from '../support/until';

// Issue 32: a window reload mid-crawl, then Resume, must fetch every page once. On a reload the extension host
// asks its workers to stop and exits at once; its exit hook used to SIGKILL the workers still finishing their pages
// (run/supervisor.ts), and a host that lived a moment longer sent a second SIGTERM (the Workers view and the crawl
// both stop them), which to a worker means "give up the pages in flight". Either way a page whose request was on the
// wire was fetched again on Resume. The host here is a stand-in (editor-host/index.ts) that ends as the real one
// does; the reload comes while a request is on the wire. Real redis-server, worker processes and HTTP site.

const HOST = resolve('out/test/integration/editor-host/index.js');

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('a window reload mid-crawl, then Resume (issue 32)', function () {
  this.timeout(180_000);
  let redis: RedisServer;
  let site: SiteServer;
  let client: Redis;
  /** Requests the site is answering now, by path. */
  const onWire = new Map<string, number>();
  /** Called with each request as it arrives. */
  let onHit: (path: string) => void = () => undefined;
  let tasks = 0;

  before(async () => {
    redis = await startRedis();
    client = new Redis(redis.url);
    // 300 ms a page, 2 at a time: a request is on the wire nearly all the time.
    site = await serveSite(
      { listPages: 3, perPage: 6 },
      0,
      (req, res) => {
        const path = req.url ?? '/';
        onWire.set(path, (onWire.get(path) ?? 0) + 1);
        res.once('close', () => onWire.set(path, onWire.get(path)! - 1));
        onHit(path);
        return false;
      },
      300,
    );
  });
  after(async () => {
    client?.disconnect();
    await site?.close();
    await redis?.stop();
  });

  /** The paths of the pages whose jobs are active in the task's queue. */
  async function activePages(task: string): Promise<string[]> {
    const bull = partitionKeys(task, task).bull;
    const ids = await client.lrange(bull.active, 0, -1);
    const data = await Promise.all(ids.map((id) => client.hget(`${bull.job}${id}`, 'data')));
    return data.filter((d) => d !== null).map((d) => new URL((JSON.parse(d) as { url: string }).url).pathname);
  }

  /**
   * Starts a crawl in an editor host, lets `interrupt` end it once the site has served 6 pages and a request is on
   * the wire, waits for the host and its workers to be gone, resumes the run here to the end, and returns the
   * pages fetched more than once, with what `interrupt` returned.
   */
  async function crawlInterrupted<T>(
    exit: 'at-once' | 'after-stop',
    interrupt: (host: { reload(): void; pids: number[]; task: string }) => T | Promise<T>,
  ): Promise<{
    twice: [string, number][];
    exits: string[];
    wire: string[];
    beatsLeft: string[];
    pids: number[];
    got: T;
  }> {
    site.hits.clear();
    const task = `reload${++tasks}`;
    const folder = mkdtempSync(join(tmpdir(), 'cs-reload-'));
    const file = join(folder, 'shop.crawl.yaml');
    writeFileSync(file, demoShopTask({ name: task, siteUrl: site.url, perHost: { concurrency: 2, delay: '0ms' } }));
    const child = spawn(process.execPath, [HOST], {
      env: { ...process.env, TASK_FILE: file, REDIS_URL: redis.url, WORKER_SCRIPT, EXIT: exit },
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    const pids: number[] = [];
    const exits: string[] = [];
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (d: string) => {
      for (const line of d.split('\n')) {
        const spawned = /^spawn (\d+)/.exec(line);
        if (spawned) pids.push(Number(spawned[1]));
        if (line.startsWith('exit ')) exits.push(line.slice(5));
      }
    });
    const hostExited = new Promise<void>((r) => child.once('exit', () => r()));
    // On the 6th page's request: it is on the wire for 300 ms.
    const wire: string[] = [];
    const sixth = new Promise<void>((r) => {
      onHit = () => {
        if (site.hits.size < 6) return;
        onHit = () => undefined;
        wire.push(...[...onWire].filter(([, n]) => n > 0).map(([p]) => p));
        r();
      };
    });
    await sixth;
    const got = await interrupt({ reload: () => child.stdin.write('reload\n'), pids, task });
    await hostExited;
    const workers = [...pids];
    await until('the workers to exit', () => workers.every((p) => !alive(p)), 60_000);
    const resumed = launchCrawl({
      task: await loadTaskFile(file),
      redisUrl: redis.url,
      workers: 1,
      concurrency: 4,
      workerScript: WORKER_SCRIPT,
      pollMs: 200,
      lockDurationMs: 2_000,
      stalledIntervalMs: 1_000,
    });
    const result = await resumed.done;
    assert.equal(result.outcome, 'finished');
    assert.ok(result.resumed, 'Resume continues the run');
    assert.equal(result.status.stats?.done, site.hits.size - (site.hits.has('/robots.txt') ? 1 : 0));
    // A worker that closed itself removed its heartbeat; one that died leaves it (unless its host released it).
    const beats = await client.hkeys(WORKERS_KEY);
    const beatsLeft = workers.map((pid) => workerIdOf(pid)).filter((id) => beats.includes(id));
    const twice = [...site.hits].filter(([p, n]) => n > 1 && p !== '/robots.txt');
    return { twice, exits, wire, beatsLeft, pids: workers, got };
  }

  it('the host exits as soon as it asked its workers to stop: they finish the pages on the wire, none is fetched again', async () => {
    const { twice, wire, beatsLeft } = await crawlInterrupted('at-once', (host) => host.reload());
    assert.ok(wire.length > 0, 'a request was on the wire at the reload');
    assert.deepEqual(twice, [], `pages fetched twice (on the wire at the reload: ${wire.join(', ')})`);
    assert.deepEqual(beatsLeft, [], 'the worker closed itself after its parent exited (killed, it leaves its beat)');
  });

  it('the host stops its workers twice (Workers view and crawl) and waits: one SIGTERM, they exit 0, none fetched again', async () => {
    const { twice, exits, wire } = await crawlInterrupted('after-stop', (host) => host.reload());
    assert.ok(wire.length > 0, 'a request was on the wire at the reload');
    assert.deepEqual(twice, [], `pages fetched twice (on the wire at the reload: ${wire.join(', ')})`);
    assert.deepEqual(
      exits.map((e) => e.split(' ').slice(1).join(' ')),
      ['0 null'],
      'the worker finished its pages and exited 0 (a second SIGTERM: 130, its pages given up)',
    );
  });

  it('workers SIGKILLed with requests on the wire: only pages they held unfinished are fetched again, once', async () => {
    const {
      twice,
      wire,
      beatsLeft,
      pids,
      got: held,
    } = await crawlInterrupted('at-once', async (host) => {
      // The pages the killed worker held: its jobs active just before and just after the kill (its replacement
      // takes none before it has booted; one it took would only widen the set).
      const pages = new Set(await activePages(host.task));
      for (const pid of host.pids) process.kill(pid, 'SIGKILL');
      for (const p of await activePages(host.task)) pages.add(p);
      // The replacement the host starts is stopped by the reload.
      await until('the replacement worker', () => host.pids.length > 1, 30_000);
      host.reload();
      return pages;
    });
    assert.ok(wire.length > 0, 'a request was on the wire at the kill');
    // At least once under SIGKILL: a page fetched (or being fetched) and not finished when its worker was killed is
    // fetched again; a finished page (its record and links written in one Lua call) never is.
    assert.deepEqual(
      twice.filter(([p, n]) => n > 2 || !held.has(p)),
      [],
      `only pages the killed worker held (${[...held].join(', ')}) fetched again, once`,
    );
    // The host may exit before it has released the killed worker's jobs and beat: those wait for their locks.
    const replacements = pids.slice(1).map((pid) => workerIdOf(pid));
    assert.deepEqual(
      beatsLeft.filter((id) => replacements.includes(id)),
      [],
      "the killed worker's replacement, stopped by the reload, closed by itself",
    );
  });
});
