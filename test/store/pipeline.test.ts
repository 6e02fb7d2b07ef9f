import { strict as assert } from 'node:assert';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Redis } from '../../src/redis/connect';
import pg from 'pg';
import { taskKeys } from '../../src/frontier/keys';
import { bufferPage, bufferPageIn } from '../../src/store/buffer';
import { openStore } from '../../src/store/open';
import type { PostgresStore } from '../../src/store/postgres';
import type { ConflictPolicy, ItemStore } from '../../src/store/types';
import { startWriter } from '../../src/store/writer';
import type { WriterHandle } from '../../src/store/writerTypes';
import { commandCalls, type RedisServer } from '../support/services';
import { postgresForSuite, type PostgresServer } from '../support/postgres';
import { connect, page, product, redisForSuite, uniqueTask, waitFor } from './helpers';

// The buffer → writer → store pipeline against a real Redis, SQLite and PostgreSQL.

const quiet = () => undefined;

describe('store: pipeline (SQLite)', function () {
  this.timeout(30_000);
  let server: RedisServer | null = null;
  let redis: Redis;
  let dir: string;
  const cleanup: (() => Promise<void>)[] = [];

  before(async function () {
    server = await redisForSuite(this);
    redis = connect(server);
    dir = mkdtempSync(join(tmpdir(), 'cs-pipe-'));
  });
  afterEach(async () => {
    while (cleanup.length) await cleanup.pop()!();
  });
  after(async () => {
    redis?.disconnect();
    await server?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  async function setup(
    task: string,
    policy: ConflictPolicy = 'ignore',
    batchSize = 100,
  ): Promise<{ store: ItemStore; writer: WriterHandle }> {
    const store = await openStore(join(dir, `${task}.sqlite`));
    const writer = await startWriter(redis, { task, store, policy, batchSize, flushMs: 30, log: quiet });
    cleanup.push(async () => {
      await writer.stop();
      await store.close();
    });
    return { store, writer };
  }

  it('three producers buffering overlapping items: each key stored once', async () => {
    const task = uniqueTask('three');
    const { store, writer } = await setup(task);
    const producers = [connect(server!), connect(server!), connect(server!)];
    cleanup.push(async () => producers.forEach((p) => p.disconnect()));
    const expected = new Map<string, string>();
    let total = 0;
    await Promise.all(
      producers.map(async (r, p) => {
        for (let n = 0; n < 60; n++) {
          // Keys overlap between pages of one producer and across producers.
          const items = Array.from({ length: 10 }, (_, i) => product(`k${(n * 7 + i * 13 + p * 5) % 250}`));
          for (const it of items) expected.set(it.key, it.data.sku as string);
          total += items.length;
          await bufferPage(r, page(task, `https://shop.test/p${p}/${n}`, items));
        }
      }),
    );
    await writer.flush({ timeoutMs: 20_000 });
    assert.equal(await writer.backlog(), 0);
    assert.equal(await store.count('product'), expected.size);
    const stored = await store.readItems('product', { limit: 1000, orderBy: 'key' });
    assert.deepEqual(stored.map((i) => i.key).sort(), [...expected.keys()].sort());
    assert.equal(await store.countPages(), 180);
    const c = writer.counters();
    assert.equal(c.received, total);
    assert.equal(c.inserted, expected.size);
    assert.equal(c.written, expected.size);
    assert.equal(
      c.duplicates + c.conflicts,
      total - expected.size,
      'every repeat is counted once, in the batch or at the database',
    );
    assert.equal(c.pages, 180);
    assert.ok(c.batches > 1, 'items are written in several batches');
    assert.ok(c.avgBatchMs > 0 && c.lastBatchMs > 0);
    assert.equal(c.errors, 0);
  });

  it("passes the conflict policy through: 'ignore' keeps the first, 'update' the newest", async () => {
    for (const policy of ['ignore', 'update'] as const) {
      const task = uniqueTask(`policy-${policy}`);
      const { store, writer } = await setup(task, policy);
      await bufferPage(
        redis,
        page(task, 'https://shop.test/1', [product('k', { name: 'first' })], { fetchedAt: 1000 }),
      );
      await writer.flush();
      await bufferPage(
        redis,
        page(task, 'https://shop.test/2', [product('k', { name: 'second' })], { fetchedAt: 2000 }),
      );
      await writer.flush();
      const [item] = await store.readItems('product');
      assert.equal(item!.data.name, policy === 'ignore' ? 'first' : 'second', policy);
      assert.equal(writer.counters().conflicts, 1);
    }
  });

  it('records malformed items and entries as errors and still writes the rest of the batch', async () => {
    const task = uniqueTask('bad');
    const { store, writer } = await setup(task, 'ignore', 1000);
    const key = taskKeys(task).items;
    // All in one MULTI so they land in one batch.
    const multi = redis.multi();
    bufferPageIn(
      multi,
      page(
        task,
        'https://shop.test/mixed',
        [
          product('good-1'),
          { type: 'product', key: '', data: { name: 'no key' } },
          { type: 'product', key: 'big', data: { blob: 'x'.repeat(2 * 1024 * 1024) } },
          product('good-2'),
        ],
        { problems: [{ type: 'product', index: 7, message: "required field 'price' empty" }] },
      ),
    );
    multi.xadd(key, '*', 'p', '{"task": "broken json');
    multi.xadd(key, '*', 'other', 'no page field');
    bufferPageIn(multi, page(task, 'https://shop.test/fine', [product('good-3')]));
    await multi.exec();
    await writer.flush({ timeoutMs: 10_000 });

    assert.deepEqual(
      (await store.readItems('product', { orderBy: 'key' })).map((i) => i.key),
      ['good-1', 'good-2', 'good-3'],
    );
    const errors = await store.readErrors();
    const summary = errors.map((e) => `${e.kind} ${e.url ?? '-'} ${e.message}`);
    assert.equal(errors.length, 5, summary.join('\n'));
    assert.match(summary[0]!, /^extract https:\/\/shop\.test\/mixed required field 'price' empty$/);
    assert.match(summary[1]!, /^invalid https:\/\/shop\.test\/mixed item 1: missing or empty 'key'$/);
    assert.match(
      summary[2]!,
      /^invalid https:\/\/shop\.test\/mixed item 2: item is \d+ bytes of JSON, more than the 1048576 allowed$/,
    );
    assert.match(summary[3]!, /^invalid - stream entry is not valid JSON/);
    assert.match(summary[4]!, /^invalid - stream entry has no 'p' field$/);
    assert.equal(writer.counters().errors, 5);
    assert.equal(await writer.backlog(), 0, 'malformed entries are acknowledged, not retried forever');
  });

  it('replays a batch whose acknowledgement failed after the commit, without storing anything twice', async () => {
    const task = uniqueTask('ackfail');
    const store = await openStore(join(dir, `${task}.sqlite`));
    let failures = 1;
    const writer = await startWriter(redis, {
      task,
      store,
      flushMs: 20,
      recoverEveryMs: 100,
      backoff: { initialMs: 20, maxMs: 50 },
      log: quiet,
      afterCommit: () => {
        if (failures-- > 0) throw new Error('connection lost before XACK');
      },
    });
    cleanup.push(async () => {
      await writer.stop();
      await store.close();
    });
    // All in one MULTI, so the first batch (the one whose acknowledgement fails) holds every page whatever the
    // machine's speed: written one by one, a busy writer could take the first page alone, and the replay then met
    // only its 2 rows.
    const multi = redis.multi();
    for (let n = 0; n < 10; n++)
      bufferPageIn(multi, page(task, `https://shop.test/${n}`, [product(`k${n}`), product('shared')]));
    await multi.exec();
    await writer.flush({ timeoutMs: 10_000 });
    assert.equal(await store.count('product'), 11);
    const c = writer.counters();
    assert.equal(c.inserted, 11);
    assert.equal(c.conflicts, 11, 'the replayed batch met its own rows, each once');
    assert.equal(c.lastError, null, 'a later success clears the error');
  });

  it('carries on when the stream is deleted under it (task reset)', async () => {
    const task = uniqueTask('reset');
    const { store, writer } = await setup(task);
    await bufferPage(redis, page(task, 'https://shop.test/1', [product('before')]));
    await writer.flush({ timeoutMs: 5_000 });
    await redis.del(taskKeys(task).items);
    // The writer notices the reset before the next page: it makes its group again, and with it the stream (MKSTREAM).
    await waitFor('the writer to make its group again', async () => (await redis.exists(taskKeys(task).items)) === 1);
    await bufferPage(redis, page(task, 'https://shop.test/2', [product('after')]));
    await writer.flush({ timeoutMs: 10_000 });
    assert.deepEqual(
      (await store.readItems('product', { orderBy: 'key' })).map((i) => i.key),
      ['after', 'before'],
    );
  });

  it('stop() hands unfinished work to the next writer; flush() of a stopped writer says so', async () => {
    const task = uniqueTask('handover');
    const store = await openStore(join(dir, `${task}.sqlite`));
    cleanup.push(() => store.close());
    const a = await startWriter(redis, { task, store, log: quiet });
    await a.stop();
    await assert.rejects(a.flush(), /is stopped/);
    for (let n = 0; n < 20; n++) await bufferPage(redis, page(task, `https://shop.test/${n}`, [product(`k${n}`)]));
    assert.equal(await a.backlog(), 20);
    const b = await startWriter(redis, { task, store, log: quiet });
    cleanup.push(() => b.stop());
    await b.flush();
    assert.equal(await store.count('product'), 20);
    // The stopped writer removed itself from the group; only the live one remains.
    const consumers = (await redis.xinfo('CONSUMERS', taskKeys(task).items, 'store')) as unknown[][];
    assert.deepEqual(
      consumers.map((c) => c[1]),
      [b.consumer],
    );
  });

  it('stop() ends a blocked read at once (CLIENT UNBLOCK) and nothing is delivered to the stopping writer', async () => {
    const task = uniqueTask('unblock');
    const store = await openStore(join(dir, `${task}.sqlite`));
    cleanup.push(() => store.close());
    const unblocks = () => commandCalls(redis, 'client|unblock');
    // An idle read of a minute: it is still blocked when stop() comes, however busy the machine (with the default
    // 500 ms it could time out between the look below and stop(), and no UNBLOCK was needed).
    const a = await startWriter(redis, { task, store, log: quiet, heartbeatMs: 60_000, idleReadMs: 60_000 });
    await waitFor('the writer blocked on its stream', async () =>
      ((await redis.client('LIST')) as string)
        .split('\n')
        .some((l) => / flags=b /.test(l) && / cmd=xreadgroup /.test(l)),
    );
    const before = await unblocks();
    await a.stop();
    assert.equal(await unblocks(), before + 1, 'the blocked read was ended by CLIENT UNBLOCK, not by its timeout');
    const consumers = (await redis.xinfo('CONSUMERS', taskKeys(task).items, 'store')) as unknown[][];
    assert.deepEqual(consumers, [], 'the stopped writer had nothing pending and left the group');
    for (let n = 0; n < 5; n++) await bufferPage(redis, page(task, `https://shop.test/${n}`, [product(`k${n}`)]));
    const b = await startWriter(redis, { task, store, log: quiet });
    cleanup.push(() => b.stop());
    await b.flush();
    assert.equal(await store.count('product'), 5);
  });
});

describe('store: pipeline (PostgreSQL)', function () {
  this.timeout(90_000);
  let server: RedisServer | null = null;
  let pgServer: PostgresServer | null = null;
  let redis: Redis;
  const cleanup: (() => Promise<void>)[] = [];

  before(async function () {
    server = await redisForSuite(this);
    pgServer = await postgresForSuite(this);
    redis = connect(server);
  });
  afterEach(async () => {
    while (cleanup.length) await cleanup.pop()!();
  });
  after(async () => {
    redis?.disconnect();
    await server?.stop();
    await pgServer?.destroy();
  });

  it('survives PostgreSQL being down for ~10 s: the buffer grows, then everything is stored once', async () => {
    const task = uniqueTask('pgdown');
    const store = await openStore(pgServer!.url, { task });
    const logs: string[] = [];
    const writer = await startWriter(redis, {
      task,
      store,
      batchSize: 200,
      flushMs: 30,
      backoff: { initialMs: 100, maxMs: 1000 },
      log: (m) => logs.push(m),
    });
    cleanup.push(async () => {
      await writer.stop();
      await store.close();
    });
    const expected = new Set<string>();
    let n = 0;
    const produce = async (pages: number) => {
      for (let i = 0; i < pages; i++, n++) {
        const items = Array.from({ length: 20 }, (_, j) => product(`k${(n * 20 + j) % 3000}`));
        items.forEach((it) => expected.add(it.key));
        await bufferPage(redis, page(task, `https://shop.test/${n}`, items));
      }
    };
    await produce(50);
    await writer.flush({ timeoutMs: 10_000 });
    assert.equal(await store.count('product'), expected.size);

    await pgServer!.stop();
    const downAt = Date.now();
    // The outage is the scenario (10 s, with pages arriving throughout), not a wait for something.
    while (Date.now() - downAt < 10_000) {
      await produce(10);
      await new Promise((r) => setTimeout(r, 500));
    }
    await waitFor('the writer to notice', () => writer.counters().backingOff);
    assert.ok(
      (await writer.backlog()) >= 150,
      `backlog ${await writer.backlog()} should hold what was buffered while the database was down`,
    );
    assert.ok(writer.counters().retries > 0);
    assert.match(
      writer.counters().lastError ?? '',
      /cannot reach PostgreSQL postgres:\/\/postgres@127\.0\.0\.1:\d+\/postgres/,
    );
    assert.ok(logs.length < 30, `a repeated failure is reported once, not per retry (${logs.length} lines)`);

    await pgServer!.start();
    await writer.flush({ timeoutMs: 30_000 });
    assert.equal(await writer.backlog(), 0);
    assert.equal(await store.count('product'), expected.size);
    assert.equal(await store.countPages(), n);
    assert.equal(await store.countErrors(), 0);
    const c = writer.counters();
    assert.equal(c.inserted, expected.size, 'each key inserted exactly once');
    assert.equal(c.backingOff, false);
    assert.equal(c.lastError, null);
  });

  it('isolates a row the database itself rejects: one error row, the rest of the batch stored', async () => {
    const task = uniqueTask('reject');
    const store = await openStore(pgServer!.url, { task });
    const writer = await startWriter(redis, { task, store, batchSize: 1000, log: quiet });
    cleanup.push(async () => {
      await writer.stop();
      await store.close();
    });
    await bufferPage(redis, page(task, 'https://shop.test/0', [product('seed')]));
    await writer.flush();
    // A real constraint the writer knows nothing about, as a DBA might add.
    const admin = new pg.Client({ connectionString: pgServer!.url });
    await admin.connect();
    try {
      await admin.query(
        `ALTER TABLE ${(store as PostgresStore).schema}.items_product ADD CONSTRAINT no_poison CHECK (key <> 'poison')`,
      );
    } finally {
      await admin.end();
    }
    const multi = redis.multi();
    bufferPageIn(multi, page(task, 'https://shop.test/1', [product('a'), product('poison'), product('b')]));
    bufferPageIn(multi, page(task, 'https://shop.test/2', [product('c')]));
    await multi.exec();
    await writer.flush({ timeoutMs: 10_000 });
    assert.deepEqual(
      (await store.readItems('product', { orderBy: 'key' })).map((i) => i.key),
      ['a', 'b', 'c', 'seed'],
    );
    const errors = await store.readErrors();
    assert.equal(errors.length, 1);
    assert.equal(errors[0]!.kind, 'store');
    assert.equal(errors[0]!.key, 'poison');
    assert.equal(errors[0]!.url, 'https://shop.test/1');
    assert.match(errors[0]!.message, /rejected the data.*no_poison/);
    assert.equal(await store.countPages(), 3);
    assert.equal(await writer.backlog(), 0);
  });

  it('two writers draining one stream concurrently store no duplicates', async () => {
    const task = uniqueTask('two');
    const stores = [await openStore(pgServer!.url, { task }), await openStore(pgServer!.url, { task })];
    const conns = [connect(server!), connect(server!)];
    const writers = await Promise.all(
      stores.map((store, i) => startWriter(conns[i]!, { task, store, batchSize: 150, flushMs: 20, log: quiet })),
    );
    cleanup.push(async () => {
      for (const w of writers) await w.stop();
      for (const s of stores) await s.close();
      conns.forEach((c) => c.disconnect());
    });
    const expected = new Set<string>();
    let total = 0;
    for (let p = 0; p < 300; p += 25) {
      const pipe = redis.pipeline();
      for (let q = p; q < p + 25; q++) {
        // Each key appears on ~4 pages, so both writers race on the same keys.
        const items = Array.from({ length: 20 }, (_, i) => product(`k${(q * 20 + i) % 1500}`, { from: `page ${q}` }));
        items.forEach((it) => expected.add(it.key));
        total += items.length;
        bufferPageIn(pipe, page(task, `https://shop.test/${q}`, items));
      }
      await pipe.exec();
    }
    await Promise.all(writers.map((w) => w.flush({ timeoutMs: 30_000 })));
    const [a, b] = writers.map((w) => w.counters());
    assert.ok(a!.batches > 0 && b!.batches > 0, 'both writers took part');
    assert.equal(a!.received + b!.received, total);
    assert.equal(a!.inserted + b!.inserted, expected.size, 'each key inserted by exactly one writer');
    assert.equal(await stores[0]!.count('product'), expected.size);
    assert.equal(await stores[0]!.countPages(), 300);
    // Field names registered concurrently are not lost either.
    assert.deepEqual(await stores[0]!.fieldNames('product'), ['sku', 'name', 'tags', 'from']);
  });
});
