import assert from 'node:assert/strict';
import type { RequestListener } from 'node:http';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { CrawlQueue } from '../../src/frontier/crawl';
import { readRunStats } from '../../src/frontier/stats';
import { partitionKeys } from '../../src/frontier/keys';
import { connectRedis } from '../../src/redis/connect';
import { attachStore } from '../../src/run/storeAttachment';
import { SqliteStore } from '../../src/store/sqlite';
import { loadTaskFile } from '../../src/workspace/taskFile';
import { serveHttp, startRedisCluster, type HttpServer, type RedisCluster } from '../support/services';
import { session } from '../support/crawl';
import { linkedPagesTask } from '../support/linkedPagesTask';

// Issue 19: a crawl on a real 3-primary Redis Cluster. The task's per-page state is split into one partition per
// primary (frontier/layout.ts), so the nodes share the crawl: each node's memory and command count within ±20% of
// the nodes' mean. And the crawl is the same crawl: every page fetched exactly once, every item stored once.
//
// The site is 12 hosts on loopback (127.0.0.2 …), as a crawl big enough for a cluster is: per-host politeness keys
// have a slot per host, so one host alone would put every page's politeness call on one node.

const HOSTS = 12;
const PAGES = 200; // per host, besides its home page

interface NodeFigures {
  readonly port: number;
  readonly memory: number;
  readonly commands: number;
}

async function figures(port: number): Promise<NodeFigures> {
  const r = new Redis({ host: '127.0.0.1', port, maxRetriesPerRequest: 1 });
  try {
    const mem = await r.info('memory');
    const stats = await r.info('commandstats');
    let commands = 0;
    for (const m of stats.matchAll(/^cmdstat_[^:]+:calls=(\d+)/gm)) commands += Number(m[1]);
    return { port, memory: Number(/^used_memory:(\d+)/m.exec(mem)![1]), commands };
  } finally {
    r.disconnect();
  }
}

function spread(values: readonly number[]): { mean: number; worst: number } {
  const mean = values.reduce((a, b) => a + b, 0) / values.length;
  return { mean, worst: Math.max(...values.map((v) => Math.abs(v - mean) / mean)) };
}

describe('a crawl on a real 3-primary Redis Cluster (issue 19)', function () {
  this.timeout(240_000);
  let cluster: RedisCluster | undefined;
  const servers: HttpServer[] = [];
  let dir: string | undefined;
  after(async () => {
    await Promise.all(servers.map((s) => s.close()));
    await cluster?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('spreads the crawl over the nodes (memory and commands within ±20%), every page once, every item stored once', async () => {
    cluster = await startRedisCluster();
    const hits = new Map<string, number>();
    for (let h = 0; h < HOSTS; h++) {
      const handler: RequestListener = (req, res) => {
        const path = req.url ?? '/';
        if (path === '/robots.txt') return void res.writeHead(404).end();
        hits.set(`${h}${path}`, (hits.get(`${h}${path}`) ?? 0) + 1);
        const n = path === '/' ? -1 : Number(/^\/p\/(\d+)$/.exec(path)?.[1] ?? NaN);
        if (Number.isNaN(n)) return void res.writeHead(404).end();
        // Each page links a few pages further on its host and one page of the next host.
        const links = [1, 2, 3]
          .map((d) => n + d)
          .filter((m) => m < PAGES)
          .map((m) => `<a href="/p/${m}">${m}</a>`);
        const next = servers[(h + 1) % HOSTS]?.url;
        if (next && n >= 0) links.push(`<a href="${next}/p/${n}">next host</a>`);
        res
          .writeHead(200, { 'content-type': 'text/html' })
          .end(`<html><body><h1>host ${h} page ${n}</h1>${links.join('')}</body></html>`);
      };
      servers.push(await serveHttp(handler, `127.0.0.${h + 2}`));
    }
    dir = mkdtempSync(join(tmpdir(), 'cs-cluster-crawl-'));
    const file = join(dir, 'spread.crawl.yaml');
    writeFileSync(
      file,
      linkedPagesTask({
        name: 'spread',
        start: servers.map((s) => `${s.url}/`),
        perHost: { concurrency: 4 },
        store: `sqlite:${join(dir, 'items.sqlite')}`,
      }),
    );
    const task = await loadTaskFile(file);

    const before = await Promise.all(cluster.nodes.map((n) => figures(n.port)));
    const storeRedis = connectRedis(cluster.url);
    const attached = await attachStore(storeRedis, task, () => undefined);
    // The product's locks, not the helper's 2 s ones (those bring a killed worker's pages back quickly, and no worker
    // is killed here): on a loaded machine a worker's event loop can stall past 2 s, its lock lapse, and the page be
    // fetched again by design (at least once), which "every page once" below would count against the Cluster.
    const s = session(task, cluster.url, {
      store: attached.hooks,
      workers: 2,
      concurrency: 8,
      lockDurationMs: 30_000,
      stalledIntervalMs: 30_000,
    });
    const result = await s.run();
    await s.close();
    await attached.close();
    storeRedis.disconnect();
    const after = await Promise.all(cluster.nodes.map((n) => figures(n.port)));

    // The same crawl as on one node.
    const total = HOSTS * (PAGES + 1);
    assert.equal(hits.size, total, `pages fetched: ${hits.size} of ${total}`);
    for (const [page, n] of hits) assert.equal(n, 1, `${page} fetched ${n} times`);
    assert.ok(result.summary, 'the session finalized the run');
    const store = new SqliteStore(join(dir, 'items.sqlite'));
    await store.open();
    try {
      assert.equal(await store.count('page'), total, 'every page stored once');
    } finally {
      await store.close();
    }
    const conn = connectRedis(cluster.url);
    try {
      const q = new CrawlQueue(conn, task.name);
      const layout = await q.loadLayout();
      assert.equal(layout.tags.length, 3, `one partition per primary: ${layout.tags.join(', ')}`);
      assert.equal((await readRunStats(conn, task.name, result.run.run)).done, total);
      // Each partition's slot is on a primary of its own.
      const owners = new Set<number>();
      for (const tag of layout.tags) {
        const key = partitionKeys(task.name, tag).frontier.meta;
        const slot = Number(await conn.cluster('KEYSLOT', key));
        const ranges = (await conn.cluster('SLOTS')) as unknown as [number, number, [string, number]][];
        owners.add(ranges.find(([a, b]) => slot >= a && slot <= b)![2][1]);
      }
      assert.equal(owners.size, 3);
      // Each partition's per-host tally expires with the run's metric history, not only the task's own.
      for (const tag of layout.tags) {
        const ttl = await conn.pttl(partitionKeys(task.name, tag).hosts(result.run.run));
        assert.ok(ttl > 0, `the host tally of partition ${tag} expires (pttl ${ttl})`);
      }
      await q.close();
    } finally {
      conn.disconnect();
    }

    // The nodes shared the work.
    const memory = after.map((a, i) => a.memory - before[i]!.memory);
    const commands = after.map((a, i) => a.commands - before[i]!.commands);
    const m = spread(memory);
    const c = spread(commands);
    const table = cluster.nodes
      .map((n, i) => `127.0.0.1:${n.port} memory +${memory[i]} B, ${commands[i]} commands`)
      .join('; ');
    console.log(
      `      per node: ${table}; worst deviation from the mean: memory ${(m.worst * 100).toFixed(1)}%, commands ${(c.worst * 100).toFixed(1)}%`,
    );
    assert.ok(m.worst <= 0.2, `memory per node within ±20% of the mean: ${table}`);
    assert.ok(c.worst <= 0.2, `commands per node within ±20% of the mean: ${table}`);
  });
});
