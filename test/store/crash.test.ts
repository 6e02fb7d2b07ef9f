import { strict as assert } from 'node:assert';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Redis } from '../../src/redis/connect';
import { taskKeys } from '../../src/frontier/keys';
import { bufferPageIn } from '../../src/store/buffer';
import { openStore } from '../../src/store/open';
import type { ItemStore } from '../../src/store/types';
import type { RedisServer } from '../support/services';
import { postgresForSuite, type PostgresServer } from '../support/postgres';
import { connect, page, product, redisForSuite, uniqueTask } from './helpers';

// A writer process SIGKILLed at the worst moments — right after a commit but before the acknowledgement, and at
// random points mid-batch — then restarted: every item must end up stored exactly once, nothing left behind.

const CHILD = join(__dirname, 'writer-child', 'index.js');
const PAGES = 900;
const PER_PAGE = 50;
const KEYS = 8_000;

interface Child {
  readonly proc: ChildProcess;
  readonly lines: string[];
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<string>;
  exited: Promise<number | null>;
}

function startChild(env: Record<string, string>): Child {
  const proc = spawn(process.execPath, ['--enable-source-maps', CHILD], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  const waiters: { pattern: RegExp; resolve: (l: string) => void }[] = [];
  let buf = '';
  proc.stdout.on('data', (d: Buffer) => {
    buf += d.toString();
    let i;
    while ((i = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      lines.push(line);
      for (const w of [...waiters]) {
        if (w.pattern.test(line)) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve(line);
        }
      }
    }
  });
  let stderr = '';
  proc.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  return {
    proc,
    lines,
    exited,
    waitFor(pattern, timeoutMs = 30_000) {
      const hit = lines.find((l) => pattern.test(l));
      if (hit) return Promise.resolve(hit);
      return new Promise((resolve, reject) => {
        const t = setTimeout(
          () =>
            reject(
              new Error(
                `writer child printed no ${pattern} in ${timeoutMs} ms; stdout:\n${lines.join('\n')}\nstderr:\n${stderr}`,
              ),
            ),
          timeoutMs,
        );
        waiters.push({ pattern, resolve: (l) => (clearTimeout(t), resolve(l)) });
        void exited.then((code) => {
          clearTimeout(t);
          reject(new Error(`writer child exited (${code}) before printing ${pattern}; stderr:\n${stderr}`));
        });
      });
    },
  };
}

async function kill(child: Child): Promise<void> {
  child.proc.kill('SIGKILL');
  await child.exited;
}

/**
 * Buffers pages [from, to), whose items overlap (each key on several pages, and across calls); adds their keys to
 * `keys`.
 */
async function produce(redis: Redis, task: string, from: number, to: number, keys: Set<string>): Promise<void> {
  for (let p = from; p < to; p += 50) {
    const pipe = redis.pipeline();
    for (let q = p; q < Math.min(to, p + 50); q++) {
      const items = Array.from({ length: PER_PAGE }, (_, i) => {
        const key = `sku-${(q * 37 + i * 11) % KEYS}`;
        keys.add(key);
        return product(key, { page: String(q) });
      });
      bufferPageIn(pipe, page(task, `https://shop.test/list/${q}`, items, { fetchedAt: 1_700_000_000_000 + q }));
    }
    await pipe.exec();
  }
}

async function verify(redis: Redis, store: ItemStore, task: string, keys: Set<string>): Promise<void> {
  assert.equal(await store.count('product'), keys.size, 'one row per distinct key');
  const stored = new Set<string>();
  for await (const item of store.iterateItems('product', { pageSize: 2000 })) {
    assert.ok(!stored.has(item.key), `key ${item.key} stored twice`);
    stored.add(item.key);
    assert.equal(item.data.sku, item.key);
  }
  assert.deepEqual(
    [...keys].filter((k) => !stored.has(k)),
    [],
    'no item lost',
  );
  assert.equal(await store.countPages(), PAGES);
  assert.equal(await store.countErrors(), 0);
  const key = taskKeys(task).items;
  assert.equal(await redis.xlen(key), 0, 'stream drained');
  const summary = (await redis.xpending(key, 'store')) as [number, ...unknown[]];
  assert.equal(summary[0], 0, 'nothing left pending');
}

for (const kind of ['sqlite', 'postgres'] as const) {
  describe(`store: writer killed with SIGKILL (${kind})`, function () {
    this.timeout(90_000);
    let redisServer: RedisServer | null = null;
    let pg: PostgresServer | null = null;
    let redis: Redis;
    let dir: string;

    before(async function () {
      redisServer = await redisForSuite(this);
      if (kind === 'postgres') pg = await postgresForSuite(this);
      redis = connect(redisServer);
      dir = mkdtempSync(join(tmpdir(), 'cs-crash-'));
    });
    after(async () => {
      redis?.disconnect();
      await redisServer?.stop();
      await pg?.destroy();
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    it('stores every item exactly once across kills after a commit and mid-batch', async () => {
      const task = uniqueTask('crash');
      const storeUrl = kind === 'sqlite' ? `sqlite:${join(dir, `${task}.sqlite`)}` : pg!.url;
      const keys = new Set<string>();
      // Some pages now, more before each writer that must reach a given batch: a writer drains thousands of items
      // within the tens of milliseconds before its kill, so a stream filled once up front could be empty before the
      // last killed writer had its batches to write (and that wait never ended).
      const first = PAGES / 9;
      await produce(redis, task, 0, first, keys);
      const env = { REDIS_URL: redisServer!.url, STORE_URL: storeUrl, TASK: task, BATCH: '1000' };

      // 1. Killed after its first commit, before XACK: the batch is in the store and still pending in Redis.
      const paused = startChild({ ...env, PAUSE_AFTER_COMMIT: '1' });
      await paused.waitFor(/^committed$/);
      await kill(paused);
      const pending = (await redis.xpending(taskKeys(task).items, 'store')) as [number, ...unknown[]];
      assert.ok(pending[0] > 0, 'the killed writer left its batch pending');

      // 2. Killed at arbitrary points while writing (inside transactions, between batches).
      let produced = first;
      for (const afterBatches of [1, 3]) {
        // Pages no writer has read yet, more than its batches up to the kill take: a writer new to a stream guesses
        // 10 items a page until it has seen some, so its first batches take up to 100 of these 50-item pages.
        const pages = 300;
        await produce(redis, task, produced, produced + pages, keys);
        produced += pages;
        const child = startChild(env);
        await child.waitFor(new RegExp(`^batch ${afterBatches}$`));
        await new Promise((r) => setTimeout(r, 5 + Math.random() * 40));
        await kill(child);
      }

      // 3. A last writer takes over whatever the dead ones left and drains the stream.
      await produce(redis, task, produced, PAGES, keys);
      const last = startChild({ ...env, FLUSH_AND_EXIT: '1' });
      const line = await last.waitFor(/^counters /, 60_000);
      assert.equal(await last.exited, 0);
      const c = JSON.parse(line.slice('counters '.length)) as { claimed: number; conflicts: number; inserted: number };
      console.log(
        `      last writer: took over ${c.claimed} entries of dead writers, ${c.conflicts} conflicts, ${c.inserted} inserted`,
      );

      const store = await openStore(storeUrl, { task });
      try {
        await verify(redis, store, task, keys);
      } finally {
        await store.close();
      }
    });
  });
}
