import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { metricsKeys, readHistory, TIERS } from '../../src/observe/metrics';
import { startRedis, type RedisServer } from '../support/services';

// readHistory's tail (issue 31): the web monitor reads only the newest samples its charts show, not a long run's
// whole history; with fewer samples than asked in the fine tier it reads the whole history, coarse tier included.

describe('metric history: the newest samples only', function () {
  this.timeout(60_000);
  let server: RedisServer;
  let redis: Redis;
  before(async () => {
    server = await startRedis();
    redis = new Redis(server.url);
  });
  after(async () => {
    redis?.disconnect();
    await server?.stop();
  });

  const sample = (t: number) =>
    JSON.stringify({
      t,
      done: t,
      failed: 0,
      skipped: 0,
      items: 0,
      enqueued: 0,
      bytes: 0,
      waiting: 0,
      active: 0,
      delayed: 0,
    });

  it('reads the last N fine samples, or everything when the fine tier holds fewer', async () => {
    const mk = metricsKeys('hist', 'r1');
    await redis.rpush(mk.tier(TIERS[1]!.name), sample(1), sample(2));
    await redis.rpush(mk.tier(TIERS[0]!.name), ...[10, 11, 12, 13, 14].map(sample));
    assert.deepEqual(
      (await readHistory(redis, 'hist', 'r1', 3)).map((s) => s.t),
      [12, 13, 14],
    );
    assert.deepEqual(
      (await readHistory(redis, 'hist', 'r1', 9)).map((s) => s.t),
      [1, 2, 10, 11, 12, 13, 14],
    );
    assert.deepEqual(
      (await readHistory(redis, 'hist', 'r1')).map((s) => s.t),
      [1, 2, 10, 11, 12, 13, 14],
    );
  });
});
