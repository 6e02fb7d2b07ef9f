import { Redis } from 'ioredis';
import { rmSync } from 'node:fs';
import { parseArgs } from 'node:util';
import {
  bufferPage,
  decodeEntry,
  mergeBatch,
  PostgresStore,
  SqliteStore,
  startWriter,
  type ItemStore,
  type PageRecord,
} from '../../src/store';

// Item writes per second into SQLite and PostgreSQL, with deduplication, two ways:
//  - store: mergeBatch (in-batch dedup) + ItemStore.writeBatch (ON CONFLICT dedup against stored rows), batches
//    of the task default (500 items), straight from decoded records;
//  - pipeline: the path a crawl takes: pages appended to the Redis items stream (XADD, as workers do), then a
//    writer (startWriter) drains the stream into the store; timed from the writer's start to flush().
// Items: 5 per page record, keys drawn so that 10% of items repeat a key already written (conflicts) and
// some repeat within a batch (merged). Prints { result: [...] }.

const { values } = parseArgs({
  options: {
    sqlite: { type: 'string' },
    postgres: { type: 'string' },
    redis: { type: 'string' },
    items: { type: 'string' },
  },
});
const total = Number(values.items ?? 100_000);
const PER_PAGE = 5;

function records(run: string, n: number): PageRecord[] {
  const out: PageRecord[] = [];
  let k = 0;
  for (let p = 0; k < n; p++) {
    const items = [];
    for (let i = 0; i < PER_PAGE && k < n; i++, k++) {
      // Every 10th item reuses an earlier key: a duplicate the store must merge.
      const id = k % 10 === 9 ? Math.floor(k / 2) : k;
      items.push({
        type: 'book',
        key: `UPC${id.toString(16).padStart(8, '0')}`,
        data: {
          title: `The book ${id}`,
          price: (5 + (id % 50)).toFixed(2),
          upc: `UPC${id.toString(16).padStart(8, '0')}`,
          in_stock: String(id % 20),
          tags: ['fiction', 'travel'],
          cover: `http://127.0.0.1:8080/media/cover-${id}.jpg`,
        },
      });
    }
    out.push({
      task: 'bench',
      run,
      url: `http://127.0.0.1:8080/catalogue/book-${p}.html`,
      rule: 'book',
      depth: 2,
      status: 200,
      fetchedAt: 1_700_000_000_000 + p,
      contentType: 'text/html; charset=utf-8',
      bytes: 15_000,
      items,
      problems: [],
    });
  }
  return out;
}

async function direct(store: ItemStore): Promise<Record<string, number>> {
  const recs = records('direct', total);
  const t0 = performance.now();
  let written = 0;
  let conflicts = 0;
  let dups = 0;
  for (let i = 0; i < recs.length; i += 500 / PER_PAGE) {
    const entries = recs
      .slice(i, i + 500 / PER_PAGE)
      .map((r, j) => decodeEntry(`${i + j}-0`, ['p', JSON.stringify(r)]));
    const m = mergeBatch(entries, 'update');
    dups += m.duplicates;
    const res = await store.writeBatch(m.pages, m.items, 'update', m.errors);
    written += res.written;
    conflicts += res.conflicts;
  }
  const s = (performance.now() - t0) / 1000;
  return { items: total, seconds: s, itemsPerSec: total / s, written, conflicts, mergedInBatch: dups };
}

async function pipeline(store: ItemStore, redis: Redis): Promise<Record<string, number>> {
  const recs = records('pipe', total);
  for (let i = 0; i < recs.length; i += 1000) {
    const p = redis.pipeline();
    for (const r of recs.slice(i, i + 1000)) p.xadd('cs:{bench}:#items', '*', 'p', JSON.stringify(r));
    await p.exec();
  }
  void bufferPage; // workers use bufferPage (one XADD per page); the pipeline above writes the same entries faster
  const t0 = performance.now();
  const writer = await startWriter(redis, { task: 'bench', store, batchSize: 500, flushMs: 200 });
  await writer.flush({ timeoutMs: 600_000 });
  const s = (performance.now() - t0) / 1000;
  const c = writer.counters();
  await writer.stop();
  return {
    items: total,
    seconds: s,
    itemsPerSec: total / s,
    written: c.written,
    conflicts: c.conflicts,
    mergedInBatch: c.duplicates,
    batches: c.batches,
  };
}

async function main() {
  const out: Record<string, unknown>[] = [];
  const redis = new Redis(values.redis!, { maxRetriesPerRequest: null });
  const targets: [string, () => ItemStore][] = [];
  if (values.sqlite) targets.push(['sqlite', () => new SqliteStore(values.sqlite!)]);
  if (values.postgres)
    targets.push([
      'postgres',
      () => new PostgresStore(values.postgres!, { schema: `bench_${Date.now().toString(36)}` }),
    ]);
  for (const [kind, make] of targets) {
    if (kind === 'sqlite') rmSync(values.sqlite!, { force: true });
    let store = make();
    await store.open();
    out.push({ store: kind, path: 'store', ...(await direct(store)) });
    await store.close();
    if (kind === 'sqlite') rmSync(values.sqlite!, { force: true });
    store = make();
    await store.open();
    await redis.del('cs:{bench}:#items');
    out.push({ store: kind, path: 'pipeline', ...(await pipeline(store, redis)) });
    await store.close();
  }
  redis.disconnect();
  console.log(JSON.stringify({ result: out }));
}
main().catch((e) => {
  console.error(e);
  process.exit(1);
});
