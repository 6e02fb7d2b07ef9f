import assert from 'node:assert/strict';
import { Cluster, Redis } from 'ioredis';
import { startRedisCluster, startRedisSentinel, type RedisCluster, type RedisSentinel } from '../support/services';

// The harnesses themselves (test/support/services.ts): a real 3-primary cluster and a real master + replica +
// sentinels, as other suites use them. Plain ioredis here, so a fault in the product's connection code cannot
// hide a fault in the harness.

describe('test harness: real Redis Cluster and Sentinel on loopback', function () {
  this.timeout(120_000);

  describe('startRedisCluster', () => {
    let cluster: RedisCluster | undefined;
    afterEach(async () => {
      await cluster?.stop();
      cluster = undefined;
    });

    it('starts 3 primaries that share the 16384 slots, serve keys of every slot, and stop by PID', async () => {
      cluster = await startRedisCluster();
      assert.equal(cluster.nodes.length, 3);
      assert.match(cluster.url, /^redis\+cluster:\/\/127\.0\.0\.1:\d+,127\.0\.0\.1:\d+,127\.0\.0\.1:\d+$/);
      const client = new Cluster(cluster.nodes.map((n) => ({ host: '127.0.0.1', port: n.port })));
      try {
        const slots = await client.cluster('SLOTS');
        const owners = new Set(slots.map((s) => s[2]![1]));
        assert.deepEqual([...owners].sort(), cluster.nodes.map((n) => n.port).sort(), 'every primary owns slots');
        assert.equal(
          slots.reduce((n, [a, b]) => n + b - a + 1, 0),
          16384,
        );
        for (let i = 0; i < 30; i++) await client.set(`k${i}`, String(i));
        // Keys landed on every node, each holding only its own slots' keys.
        const perNode = await Promise.all(client.nodes('master').map((n) => n.dbsize()));
        assert.equal(
          perNode.reduce((a, b) => a + b, 0),
          30,
        );
        assert.ok(
          perNode.every((n) => n > 0),
          `keys on every node: ${perNode.join(', ')}`,
        );
      } finally {
        client.disconnect();
      }
      const pids = cluster.nodes.map((n) => n.pid);
      await cluster.stop();
      for (const pid of pids) assert.throws(() => process.kill(pid, 0), 'the node process is gone');
      cluster = undefined;
    });
  });

  describe('startRedisSentinel', () => {
    let setup: RedisSentinel | undefined;
    afterEach(async () => {
      await setup?.stop();
      setup = undefined;
    });

    function client(s: RedisSentinel, password?: string, sentinelPassword?: string): Redis {
      const c = new Redis({
        sentinels: s.sentinels.map((n) => ({ host: '127.0.0.1', port: n.port })),
        name: s.masterName,
        password,
        sentinelPassword,
        maxRetriesPerRequest: null,
      });
      c.on('error', () => undefined);
      return c;
    }

    it('a master, a replica and 3 sentinels; SENTINEL FAILOVER promotes the replica with the data and demotes the old master', async () => {
      setup = await startRedisSentinel();
      assert.equal(setup.dataNodes.length, 2);
      assert.equal(setup.sentinels.length, 3);
      assert.match(setup.url, /^redis\+sentinel:\/\/(127\.0\.0\.1:\d+,){2}127\.0\.0\.1:\d+\/csmaster$/);
      const first = await setup.master();
      assert.equal(first, setup.dataNodes[0]);
      const c = client(setup);
      try {
        await c.set('before', '1');
        assert.equal(await c.wait(1, 5_000), 1, 'the replica acknowledged the write');
        const next = await setup.failover();
        assert.notEqual(next.port, first.port);
        assert.equal(await setup.master(), next);
        const direct = new Redis(next.port, '127.0.0.1');
        try {
          assert.equal(await direct.get('before'), '1', 'the promoted replica has the data');
        } finally {
          direct.disconnect();
        }
      } finally {
        c.disconnect();
      }
    });

    it('with passwords on data nodes and sentinels; killing the master elects the replica', async () => {
      setup = await startRedisSentinel({ password: 'p@ss/w:rd', sentinelPassword: 's3cret' });
      assert.match(setup.url, /^redis\+sentinel:\/\/:p%40ss%2Fw%3Ard@.*\/csmaster\?sentinelPassword=s3cret$/);
      const c = client(setup, 'p@ss/w:rd', 's3cret');
      try {
        await c.set('before', '1');
        assert.equal(await c.wait(1, 5_000), 1);
        const old = await setup.master();
        const next = await setup.killMaster();
        assert.equal(old.alive(), false);
        assert.notEqual(next.port, old.port);
        // The sentinel-mode client finds the new master by itself.
        assert.equal(await c.get('before'), '1');
        await c.set('after', '2');
      } finally {
        c.disconnect();
      }
    });
  });
});
