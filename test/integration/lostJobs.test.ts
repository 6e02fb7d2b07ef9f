import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { Queue, Worker } from 'bullmq';
import type { LogFields, LogLevel } from '../../src/core/logLine';
import { connectRedis } from '../../src/redis/connect';
import { LostJobs } from '../../src/worker/lostJobs';
import { redisForSuite } from '../support/services';

// Jobs Redis handed to a worker in answers lost with its connection (src/worker/lostJobs.ts), on a real Redis with
// BullMQ's own scripts. A lost answer is played by running the script that took the job again, as ioredis does when
// it sends a command again after reconnecting: the job the first run took is never heard of by the worker.

describe("jobs handed over in lost answers are given back (real Redis, BullMQ's scripts)", function () {
  this.timeout(60_000);
  const redis = redisForSuite();
  let queue: Queue;
  let worker: Worker;
  const logged: Array<{ level: LogLevel; message: string; fields?: LogFields }> = [];
  const log = (level: LogLevel, message: string, fields?: LogFields): void =>
    void logged.push({ level, message, fields });
  const lock = (id: string) => redis.conn.get(`${worker.toKey(id)}:lock`);

  beforeEach(async () => {
    logged.length = 0;
    const name = `lost-${Math.random().toString(36).slice(2)}`;
    queue = new Queue(name, { connection: connectRedis(redis.server.url) });
    // Jobs are taken by hand (getNextJob), with tokens as BullMQ's main loop makes them.
    worker = new Worker(name, null, {
      connection: connectRedis(redis.server.url),
      autorun: false,
      lockDuration: 30_000,
    });
    await worker.waitUntilReady();
    await queue.addBulk([1, 2, 3].map((n) => ({ name: 'page', data: { n } })));
  });
  afterEach(async () => {
    await worker.close(true);
    await queue.close();
  });

  it('a job taken twice under one token (moveToActive sent again): the one never started goes back, once', async () => {
    const lost = new LostJobs(redis.conn, log, 'lost', 200);
    const token = `${worker.id}:0`;
    const unheard = await worker.getNextJob(token);
    const heard = await worker.getNextJob(token);
    assert.ok(unheard?.id && heard?.id);
    lost.started(heard.id);
    assert.deepEqual(await lost.afterReconnect(worker), [unheard.id]);
    assert.deepEqual(await queue.getJobCounts('active', 'wait'), { active: 1, wait: 2 });
    assert.equal(await lock(unheard.id), null);
    assert.equal(await lock(heard.id), token, 'the job the worker works on keeps its lock');
    const again = await worker.getNextJob(`${worker.id}:1`);
    assert.equal(
      again?.id,
      unheard.id,
      'given back to the front of the queue is not promised, but it is the next here',
    );
    assert.equal(again?.stalledCounter ?? 0, 0, 'no stall counted');
    lost.started(String(again?.id));
    assert.match(logged[0]!.message, new RegExp(`^gave back job ${unheard.id} to the queue: Redis handed it`));
    assert.equal(logged[0]!.level, 'warn');
    assert.deepEqual(await lost.afterReconnect(worker), [], 'nothing more to give back');
  });

  it('the next job a finish took (moveToFinished sent again, "Missing lock") goes back', async () => {
    const lost = new LostJobs(redis.conn, log, 'lost', 200);
    const token = `${worker.id}:0`;
    const job = await worker.getNextJob(token);
    assert.ok(job?.id);
    lost.started(job.id);
    const answer = (await job.moveToCompleted('done', token, true)) as unknown[];
    const next = String(answer[1]);
    assert.equal(await lock(next), token, 'BullMQ locks the next job with the finished job’s token');
    await assert.rejects(job.moveToCompleted('done', token, true), /^Error: Missing lock for job .*\. moveToFinished$/);
    lost.ended(job.id);
    assert.deepEqual(await lost.afterReconnect(worker), [next]);
    assert.deepEqual(await queue.getJobCounts('active', 'wait', 'completed'), { active: 0, wait: 2, completed: 1 });
  });

  it("leaves alone another worker's jobs, a job started between the looks, and looks across a reconnect", async () => {
    const lost = new LostJobs(redis.conn, log, 'lost', 300);
    const other = await worker.getNextJob('another-worker:0');
    const late = await worker.getNextJob(`${worker.id}:1`);
    assert.ok(other?.id && late?.id);
    // Started between the two looks: on its way to the processor, not lost.
    const lateId = late.id;
    setTimeout(() => lost.started(lateId), 100);
    assert.deepEqual(await lost.afterReconnect(worker), []);
    lost.ended(late.id);
    // The connection closing between the two looks: that pair proves nothing, and the looks start again. The job is
    // started during the second pair (it was on its way), so nothing is given back; given back from the first pair,
    // it would be.
    const events = new EventEmitter();
    lost.watch(worker, events);
    const looked = lost.afterReconnect(worker);
    setTimeout(() => events.emit('close'), 100);
    setTimeout(() => lost.started(lateId), 450);
    assert.deepEqual(await looked, []);
    lost.ended(lateId);
    assert.deepEqual(await queue.getJobCounts('active', 'wait'), { active: 2, wait: 1 });
    // The next 'ready' does look again, and gives back the job that is still unheard of.
    events.emit('ready');
    await until(async () => (await queue.getJobCounts('wait')).wait === 2);
    assert.equal(await lock(late.id), null);
    assert.equal(await lock(other.id), 'another-worker:0');
    assert.equal(logged.length, 1);
  });
});

async function until(cond: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 100; i++) {
    if (await cond()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.fail('condition not met in 5 s');
}
