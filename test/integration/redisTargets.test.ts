import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { Redis as NodeClient, type Cluster } from 'ioredis';
import { connectRedis, isCluster, type Redis } from '../../src/redis/connect';
import { nodeFor, scanKeys, unlinkKeys } from '../../src/redis/nodes';
import { replicaWait } from '../../src/redis/replicas';
import { withScripts } from '../../src/frontier/scripts';
import { taskKeys } from '../../src/frontier/keys';
import { until } from '../support/until';
import {
  commandCalls,
  startRedisCluster,
  startRedisSentinel,
  type RedisCluster,
  type RedisSentinel,
} from '../support/services';

// Connections to Sentinel and Cluster deployments from one target string (issue 19): the engine's connectRedis,
// the per-node helpers that replace single-node assumptions, and the CLI flags. Real servers, started here.

const exec = promisify(execFile);
const CLI = resolve('dist/cli.js');

function taskFile(name: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'cs-targets-'));
  const file = join(dir, `${name}.crawl.yaml`);
  writeFileSync(file, `name: ${name}\nstart: [http://127.0.0.1:9/]\nrules:\n  - name: page\n`);
  return file;
}

describe('Redis targets: Sentinel and Cluster connections (issue 19)', function () {
  this.timeout(120_000);

  describe('on a real 3-primary cluster', () => {
    let cluster: RedisCluster;
    let redis: Redis;
    before(async () => {
      cluster = await startRedisCluster();
      redis = connectRedis(cluster.url);
      await redis.ping();
    });
    after(async () => {
      redis?.disconnect();
      await cluster?.stop();
    });

    it('connectRedis gives a cluster client that reaches every slot', async () => {
      assert.ok(isCluster(redis));
      for (let i = 0; i < 50; i++) await redis.set(`t:spread:${i}`, String(i));
      const perNode = await Promise.all(redis.nodes('master').map((n) => n.dbsize()));
      assert.equal(perNode.length, 3);
      assert.ok(
        perNode.every((n) => n > 0),
        `keys on every primary: ${perNode.join(', ')}`,
      );
    });

    it('scanKeys on a client that has not connected yet still scans every primary', async () => {
      await redis.set('t:fresh:1', '1');
      const fresh = connectRedis(cluster.url);
      try {
        const seen: string[] = [];
        for await (const batch of scanKeys(fresh, 't:fresh:*')) seen.push(...batch);
        assert.deepEqual(seen, ['t:fresh:1']);
      } finally {
        fresh.disconnect();
      }
    });

    it('scanKeys sees the keys of every primary, unlinkKeys removes keys of many slots', async () => {
      const keys = Array.from({ length: 40 }, (_, i) => `t:scan:${i}`);
      await Promise.all(keys.map((k) => redis.set(k, '1')));
      const seen: string[] = [];
      for await (const batch of scanKeys(redis, 't:scan:*', 7)) seen.push(...batch);
      assert.deepEqual([...new Set(seen)].sort(), [...keys].sort());
      // A single UNLINK of these keys is refused (CROSSSLOT): the helper sends one per key.
      await assert.rejects(redis.unlink(...keys), /CROSSSLOT|same slot/i);
      assert.equal(await unlinkKeys(redis, keys), 40);
      const left: string[] = [];
      for await (const batch of scanKeys(redis, 't:scan:*')) left.push(...batch);
      assert.deepEqual(left, []);
    });

    it('nodeFor: CLIENT ID and CLIENT UNBLOCK reach the node where a read blocks, not any node', async () => {
      const key = 'cs:{blocking}:#items';
      const blocking = connectRedis(cluster.url);
      try {
        await blocking.ping();
        // The id first: asked on the same connection after the read, it would wait behind the blocked read.
        const id = await (await nodeFor(blocking, key)).client('ID');
        const read = blocking.call('XREAD', 'BLOCK', 60_000, 'STREAMS', key, '$');
        const owner = await nodeFor(redis, key);
        const others = (redis as Cluster).nodes('master').filter((n) => n.options.port !== owner.options.port);
        // The XREAD must have reached its node: an UNBLOCK before it finds nothing to end (a bounded poll of 5 s
        // went on regardless, which a busy machine could outlast).
        await until('the XREAD blocked on its node', async () =>
          String(await owner.client('LIST'))
            .split('\n')
            .some((l: string) => l.includes(`id=${id} `) && /cmd=xread/.test(l)),
        );
        for (const n of others)
          assert.equal(await n.client('UNBLOCK', id), 0, 'another node has no such blocked client');
        assert.equal(await owner.client('UNBLOCK', id), 1);
        assert.equal(await read, null, 'the blocked read ended, empty');
      } finally {
        blocking.disconnect();
      }
    });

    it("auto-pipelining sends csDiscover (whose first argument is not a key) to its keys' node", async () => {
      // The worker's connection pipelines the commands of a tick per node, grouping each by its first argument.
      const worker = withScripts(connectRedis(cluster.url, { enableAutoPipelining: true }));
      try {
        await worker.ping();
        const c = worker as Cluster;
        const ownerOf = async (key: string) => c.slots[Number(await c.cluster('KEYSLOT', key))]![0];
        // A task whose slot is on another node than the slot of "3", csDiscover's first argument here.
        let task = '';
        for (let i = 0; !task; i++)
          if ((await ownerOf(taskKeys(`t${i}`).meta)) !== (await ownerOf('3'))) task = `t${i}`;
        const k = taskKeys(task);
        // In the same tick: a command of the task's slot, and one of a key on the node of "3" (a host's key, say).
        const [run, , discovered] = await Promise.allSettled([
          worker.hget(k.meta, 'run'),
          worker.get('3'),
          // lua/discover.lua: stats, the frontier's meta, a seen bucket; the frontier's parameters, limit, run, 1 URL.
          worker.csDiscover(
            3,
            k.stats('r'),
            k.frontier.meta,
            k.seenBucket('r', 0),
            k.frontier.prefix,
            k.bull.job,
            0,
            2,
            5000,
            0,
            1,
            '0',
            '0',
            'r',
            1,
            '',
            '1',
            'h',
            '1000',
            'h0 page /',
          ),
        ]);
        assert.deepEqual(run, { status: 'fulfilled', value: null });
        // The script ran (and refused: the task has no run 'r'), instead of the pipeline failing before it.
        assert.equal(discovered.status, 'rejected');
        assert.match(discovered.reason.message, /RUNGONE/);
      } finally {
        worker.disconnect();
      }
    });

    it('the CLI takes --cluster host:port,…', async () => {
      const file = taskFile('via-cluster-flag');
      const hosts = cluster.nodes.map((n) => `127.0.0.1:${n.port}`).join(',');
      const r = await exec(process.execPath, [CLI, 'status', file, '--cluster', hosts]);
      assert.match(r.stdout, /^via-cluster-flag: never run on this Redis$/m);
    });
  });

  describe('through real sentinels', () => {
    let setup: RedisSentinel;
    const password = 'p@ss/w:rd';
    const sentinelPassword = 's3n&tinel';
    before(async () => {
      setup = await startRedisSentinel({ password, sentinelPassword });
    });
    after(async () => {
      await setup?.stop();
    });

    it('connectRedis finds the master by name with both passwords, and follows a failover by itself', async () => {
      assert.match(setup.url, /^redis\+sentinel:\/\//);
      const redis = connectRedis(setup.url);
      try {
        assert.ok(!isCluster(redis));
        await redis.set('before', '1');
        const first = await setup.master();
        const info = await redis.info('server');
        assert.equal(Number(/^tcp_port:(\d+)/m.exec(info)![1]), first.port, 'connected to the master');
        const next = await setup.failover();
        // The same client, never told: it writes to the new master, which has the data written before.
        await redis.set('after', '2');
        assert.equal(Number(/^tcp_port:(\d+)/m.exec(await redis.info('server'))![1]), next.port);
        assert.deepEqual(await redis.mget('before', 'after'), ['1', '2']);
        assert.equal(((await redis.call('ROLE')) as unknown[])[0], 'master');
      } finally {
        redis.disconnect();
      }
    });

    it("a write through Sentinel is confirmed by the replica (WAIT on the writer's connection); a reconnect in between says it may be lost", async () => {
      const redis = connectRedis(setup.url);
      const masterNode = await setup.master();
      const master = new NodeClient({ host: '127.0.0.1', port: masterNode.port, password });
      const replicaNode = setup.dataNodes.find((n) => n.port !== masterNode.port)!;
      const replica = new NodeClient({ host: '127.0.0.1', port: replicaNode.port, password });
      try {
        const w = replicaWait(redis);
        assert.ok(w, 'a connection through Sentinel has a replica wait');
        assert.equal(replicaWait(master), null, 'a node connection has none: no WAIT there');
        // Read before the connection is ready: its first connection is not a move to another master.
        const first = w.epoch();
        await redis.set('waited', '1');
        const waits = await commandCalls(master, 'wait');
        assert.equal(await w.confirm(first), true);
        assert.equal(await commandCalls(master, 'wait'), waits + 1, 'one WAIT, on the master');
        assert.equal(await replica.get('waited'), '1', 'the replica has the write once it is confirmed');
        // The connection dropped and made again (as after a failover): writes since `since` may be on a master gone.
        const since = w.epoch();
        const id = await redis.client('ID');
        await master.client('KILL', 'ID', String(id));
        await redis.set('moved', '1');
        assert.equal(await w.confirm(since), false);
        assert.equal(await w.confirm(w.epoch()), true, 'from the new connection on, writes are confirmed again');
      } finally {
        redis.disconnect();
        master.disconnect();
        replica.disconnect();
      }
    });

    it('a write is not confirmed while the attached replica lags past a WAIT, only once it has the write', async () => {
      const redis = connectRedis(setup.url);
      const masterNode = await setup.master();
      const replicaNode = setup.dataNodes.find((n) => n.port !== masterNode.port)!;
      const replica = new NodeClient({ host: '127.0.0.1', port: replicaNode.port, password });
      try {
        const w = replicaWait(redis)!;
        await redis.set('warm', '1');
        assert.equal(await w.confirm(w.epoch()), true);
        // The replica frozen: still attached (the master drops it only after repl-timeout), but it acknowledges
        // nothing, so each WAIT times out (2 s). A write confirmed now could be lost with the master.
        process.kill(replicaNode.pid, 'SIGSTOP');
        let confirmed: boolean | undefined;
        try {
          const since = w.epoch();
          await redis.set('lagging', '1');
          const pending = w.confirm(since).then((ok) => (confirmed = ok));
          // Past two WAITs' timeouts, whatever the machine's speed: the write is still waited for.
          await new Promise((r) => setTimeout(r, 5_000));
          assert.equal(confirmed, undefined, 'not confirmed while no replica has the write');
          process.kill(replicaNode.pid, 'SIGCONT');
          assert.equal(await pending, true);
        } finally {
          process.kill(replicaNode.pid, 'SIGCONT');
        }
        assert.equal(await replica.get('lagging'), '1', 'the replica has the write once it is confirmed');
      } finally {
        redis.disconnect();
        replica.disconnect();
      }
    });

    it('the CLI takes --sentinel and --sentinel-master, passwords from the environment, never from its arguments', async () => {
      const file = taskFile('via-sentinel-flag');
      const hosts = setup.sentinels.map((s) => `127.0.0.1:${s.port}`).join(',');
      const env = {
        ...process.env,
        CRAWL_STUDIO_REDIS: '',
        CRAWL_STUDIO_REDIS_PASSWORD: password,
        CRAWL_STUDIO_SENTINEL_PASSWORD: sentinelPassword,
      };
      const r = await exec(
        process.execPath,
        [CLI, 'status', file, '--sentinel', hosts, '--sentinel-master', setup.masterName],
        { env },
      );
      assert.match(r.stdout, /^via-sentinel-flag: never run on this Redis$/m);
      // The same target as one URL in the environment.
      const r2 = await exec(process.execPath, [CLI, 'status', file], {
        env: { ...process.env, CRAWL_STUDIO_REDIS: setup.url },
      });
      assert.match(r2.stdout, /never run on this Redis/);
    });

    it('a malformed target is refused before anything starts, with the password hidden', async () => {
      const file = taskFile('bad-target');
      const err = await exec(process.execPath, [
        CLI,
        'status',
        file,
        '--redis',
        `redis+sentinel://:hunter2@127.0.0.1:1/m?sentinelPassword=opensesame&dbb=1`,
      ]).then(
        () => assert.fail('accepted'),
        (e: { code: number; stderr: string }) => e,
      );
      assert.equal(err.code, 2);
      assert.match(err.stderr, /unknown parameter 'dbb'/);
      assert.doesNotMatch(err.stderr, /hunter2|opensesame/);
      const flags = await exec(process.execPath, [CLI, 'status', file, '--sentinel', '127.0.0.1:1']).then(
        () => assert.fail('accepted'),
        (e: { code: number; stderr: string }) => e,
      );
      assert.equal(flags.code, 2);
      assert.match(flags.stderr, /--sentinel needs --sentinel-master/);
    });
  });
});
