import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { Redis } from 'ioredis';
import { keepOutput, ownRedisOn, startRedis } from '../support/services';

// The suite runs stages side by side, each starting its own redis-servers on ports freePort() hands out. A port can
// be taken by another stage's server between the pick and the bind; the harness then used that server (it only
// waited for something to answer on the port) while its own exited with "Address already in use". Seen in a full
// run: the cluster fault scenarios' `redis-cli --cluster create` met a plain node ("not configured as a cluster
// node"). A harness must start its own server or say why it could not.

describe('test harness: a redis-server is the harness own, or an error', () => {
  it('ownRedisOn says port-taken when another server holds the port, and ready for its own', async () => {
    const other = await startRedis();
    try {
      const child = spawn('redis-server', ['--port', String(other.port), '--bind', '127.0.0.1', '--save', ''], {
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      assert.equal(await ownRedisOn(child, other.port, keepOutput(child)), 'port-taken');
      await assert.rejects(startRedis({ port: other.port }), /cannot listen on 127\.0\.0\.1:\d+: another process/);
    } finally {
      await other.stop();
    }
    const mine = await startRedis();
    try {
      const r = new Redis(mine.port, '127.0.0.1');
      const info = await r.info('server');
      r.disconnect();
      assert.equal(Number(/^process_id:(\d+)/m.exec(info)?.[1]), mine.process.pid, 'the server answering is its own');
    } finally {
      await mine.stop();
    }
  });
});
