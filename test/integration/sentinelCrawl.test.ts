import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { allBooks, expectedPages, renderPage, serveSite, type SiteOptions, type SiteServer } from '../../src/demo/site';
import { Redis } from 'ioredis';
import { commandCalls, startRedis, startRedisSentinel, type RedisNode, type RedisSentinel } from '../support/services';
import { switchProxy } from '../support/switchProxy';
import { failOver } from '../support/failover';
import { bookTask, exportedUpcs, writeTask } from '../support/crawl';

// A crawl through sentinels and a master name given on the CLI, with a failover in the middle of it (issue 19,
// item 3). The real CLI, its worker processes and store writer, a real master, replica and 3 sentinels.
//
// The data nodes run with min-replicas-to-write 1: once its replica has left (promoted), the old master refuses
// writes (NOREPLICAS) instead of acknowledging writes nobody will read; the clients reconnect through the
// sentinels and send them again (src/redis/connect.ts). See README "Running a fleet" for what a failover does
// and does not keep.

const CLI = resolve('dist/cli.js');
const SITE: SiteOptions = { listPages: 6, perPage: 10, filler: 1 };
/** Pages served before the failover; the next ones wait until the new master is in place. */
const BEFORE = 15;
const UNTIL_HELD = 30;

interface Crawl {
  readonly code: number | null;
  readonly out: string;
}

/** `crawl-studio run` through the sentinels, as a child process; output kept for the assertion messages. */
function runThroughSentinels(setup: RedisSentinel, taskFile: string): Promise<Crawl> {
  const hosts = setup.sentinels.map((s) => `127.0.0.1:${s.port}`).join(',');
  return runWith(taskFile, ['--sentinel', hosts, '--sentinel-master', setup.masterName], {
    CRAWL_STUDIO_REDIS: '',
    CRAWL_STUDIO_REDIS_PASSWORD: PASSWORD,
  });
}

/** `crawl-studio run` on one Redis endpoint. */
function runOn(url: string, taskFile: string): Promise<Crawl> {
  return runWith(taskFile, ['--redis', url], {});
}

function runWith(taskFile: string, target: string[], env: Record<string, string>): Promise<Crawl> {
  const child = spawn(process.execPath, [CLI, 'run', taskFile, '--workers', '2', '--concurrency', '4', ...target], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...env },
  });
  let out = '';
  child.stdout.on('data', (b: Buffer) => (out += b.toString()));
  child.stderr.on('data', (b: Buffer) => (out += b.toString()));
  return new Promise((resolve) => child.on('exit', (code) => resolve({ code, out })));
}

const PASSWORD = 'fail0ver-pw';

/** WAITs the data nodes still running have run (INFO commandstats): a worker's wait for a replica (redis/replicas.ts). */
async function waitCalls(setup: RedisSentinel): Promise<number> {
  let n = 0;
  for (const node of setup.dataNodes.filter((d) => d.alive())) {
    const conn = new Redis({ host: '127.0.0.1', port: node.port, password: PASSWORD });
    try {
      n += await commandCalls(conn, 'wait');
    } finally {
      conn.disconnect();
    }
  }
  return n;
}

describe('a crawl through Redis Sentinel or a primary endpoint, with a failover during it', function () {
  this.timeout(300_000);
  let setup: RedisSentinel | undefined;
  let site: SiteServer | undefined;
  afterEach(async () => {
    await site?.close();
    await setup?.stop();
    site = undefined;
    setup = undefined;
  });

  /**
   * Serves the site with 50 ms per page; at page `BEFORE` starts `failover`, and from page `UNTIL_HELD` on holds
   * each response until `failover` has resolved (the new master in place), so part of the crawl surely runs on
   * each master, and pages are in flight across the switch.
   */
  async function siteWithFailover<T = RedisNode>(
    failover: () => Promise<T>,
  ): Promise<{ site: SiteServer; switched: Promise<{ node: T; pagesBefore: number }> }> {
    let pages = 0;
    let start!: () => void;
    const started = new Promise<void>((r) => (start = r));
    const switched = started.then(async () => ({ node: await failover(), pagesBefore: BEFORE }));
    switched.catch(() => undefined); // awaited by the test; held responses are dropped if it fails
    const s = await serveSite(
      SITE,
      0,
      (req, res) => {
        if (req.url === '/robots.txt') return false;
        pages++;
        if (pages === BEFORE) start();
        if (pages < UNTIL_HELD) return false;
        // Held, then answered here as the site would, once the new master is in place.
        void switched.then(
          () => {
            const page = renderPage(req.url!.split('?')[0]!, SITE);
            if (!page) res.writeHead(404).end();
            else res.writeHead(page.status, { 'content-type': page.type }).end(page.body);
          },
          () => res.destroy(),
        );
        return true;
      },
      50,
    );
    return { site: s, switched };
  }

  async function assertNothingLost(taskFile: string, s: SiteServer, crawl: Crawl): Promise<void> {
    assert.equal(crawl.code, 0, crawl.out);
    const pages = expectedPages(s.url, SITE);
    const counts = pages.map((u) => s.hits.get(u.slice(s.url.length)) ?? 0);
    const missing = pages.filter((_, i) => counts[i] === 0);
    assert.deepEqual(missing, [], `pages never fetched\n${crawl.out}`);
    assert.match(crawl.out, new RegExp(`pages fetched +${pages.length}\\b`), crawl.out);
    const upcs = await exportedUpcs(taskFile);
    assert.deepEqual(
      upcs,
      allBooks(SITE)
        .map((b) => b.upc)
        .sort(),
      'every item stored, once',
    );
  }

  it('a graceful SENTINEL FAILOVER mid-crawl (writes paused until the replica has them): workers and writer follow the new master; every page fetched once, every item stored once', async () => {
    setup = await startRedisSentinel({
      password: PASSWORD,
      args: ['--min-replicas-to-write', '1', '--min-replicas-max-lag', '10'],
    });
    const first = await setup.master();
    const sentinel = setup;
    const served = await siteWithFailover(() => sentinel.failover({ pauseWrites: true }));
    site = served.site;
    const task = await writeTask(
      bookTask(site.url, 'failover', '', {
        request: '{ timeout: 30s, retries: { attempts: 3, backoff: fixed, delay: 100ms } }',
      }),
    );
    const crawl = await runThroughSentinels(setup, task.file);
    const { node, pagesBefore } = await served.switched;
    assert.notEqual(node.port, first.port, 'the master changed');
    assert.ok(pagesBefore < expectedPages(site.url, SITE).length);
    await assertNothingLost(task.file, site, crawl);
    const twice = [...site.hits].filter(([p, n]) => p !== '/robots.txt' && n > 1);
    assert.deepEqual(twice, [], `no page fetched twice\n${crawl.out}`);
    // Both data nodes are up, each with the calls it ran as master: the workers waited for a replica (WAIT 1) as
    // they finished pages. Nothing else in the crawl sends WAIT.
    assert.ok((await waitCalls(setup)) > 0, 'the workers sent WAIT');
  });

  it('the master killed mid-crawl: the sentinels elect a replica, the crawl carries on to the end, nothing lost', async () => {
    // Two replicas: with min-replicas-to-write 1, the promoted one needs the other as its replica to take writes
    // (with one replica, the crawl waits, refused NOREPLICAS, until the dead node is back as a replica).
    setup = await startRedisSentinel({
      replicas: 2,
      password: PASSWORD,
      args: ['--min-replicas-to-write', '1', '--min-replicas-max-lag', '10'],
    });
    const first = await setup.master();
    const sentinel = setup;
    const served = await siteWithFailover(() => sentinel.killMaster());
    site = served.site;
    const task = await writeTask(
      bookTask(site.url, 'killed', '', {
        request: '{ timeout: 30s, retries: { attempts: 3, backoff: fixed, delay: 100ms } }',
      }),
    );
    const crawl = await runThroughSentinels(setup, task.file);
    const { node } = await served.switched;
    assert.notEqual(node.port, first.port);
    assert.equal(first.alive(), false);
    await assertNothingLost(task.file, site, crawl);
    const twice = [...site.hits].filter(([p, n]) => p !== '/robots.txt' && n > 1);
    console.log(
      `      pages fetched more than once after the kill: ${twice.length}${twice.length ? ` (${twice.map(([p]) => p).join(', ')})` : ''}`,
    );
  });

  it("a managed Redis's primary endpoint moved by a failover (FAILOVER, then the endpoint switched): the crawl follows it to the end", async () => {
    // ElastiCache, Memorystore and Azure Cache give one endpoint (a DNS name) for the primary and move it to the
    // replica they promote; connections open before stay with the old primary, now a replica that refuses writes.
    const a = await startRedis();
    const b = await startRedis();
    const endpoint = await switchProxy(a.port);
    const admin = (port: number) => new Redis({ host: '127.0.0.1', port });
    const [ca, cb] = [admin(a.port), admin(b.port)];
    try {
      await cb.call('REPLICAOF', '127.0.0.1', String(a.port));
      const served = await siteWithFailover(async () => {
        // Redis's own coordinated failover: writes paused until the replica has them, then the roles swapped.
        await failOver(ca, cb, b.port);
        endpoint.switchTo(b.port);
        return b.port;
      });
      site = served.site;
      const task = await writeTask(
        bookTask(site.url, 'endpoint', '', {
          request: '{ timeout: 30s, retries: { attempts: 3, backoff: fixed, delay: 100ms } }',
        }),
      );
      const crawl = await runOn(endpoint.url, task.file);
      const { node } = await served.switched;
      assert.equal(node, b.port);
      assert.match(await ca.info('replication'), /^role:slave/m, 'the old primary was demoted');
      await assertNothingLost(task.file, site, crawl);
      const twice = [...site.hits].filter(([p, n]) => p !== '/robots.txt' && n > 1);
      assert.deepEqual(twice, [], `no page fetched twice\n${crawl.out}`);
    } finally {
      ca.disconnect();
      cb.disconnect();
      await endpoint.close();
      await a.stop();
      await b.stop();
    }
  });
});
