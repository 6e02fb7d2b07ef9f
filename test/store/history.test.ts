import { strict as assert } from 'node:assert';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { changedItems, defaultChangeRun, runChangeCounts } from '../../src/store/history/query';
import { openStore } from '../../src/store/open';
import type { ItemRow, ItemStore, PageRow, RunSummary } from '../../src/store/types';
import { postgresForSuite, type PostgresServer } from '../support/postgres';

// Item history through the ItemStore interface, the same checks on SQLite and PostgreSQL: first and last run,
// field changes, removal only by a complete run, idempotent replays, retention.

const TASK = 'shop';

function items(run: string, at: number, list: Record<string, Record<string, unknown>>): ItemRow[] {
  return Object.entries(list).map(([key, data]) => ({
    type: 'product',
    key,
    json: JSON.stringify(data),
    fields: Object.keys(data),
    url: `https://shop.test/${key}`,
    rule: 'detail',
    run,
    fetchedAt: at,
  }));
}

function summary(run: string, at: number): RunSummary {
  return {
    run,
    task: TASK,
    startedAt: at,
    finishedAt: at + 1,
    durationMs: 1,
    pages: 1,
    items: 1,
    duplicates: 0,
    conflicts: 0,
    failures: 0,
  };
}

/** Closes a run's history, keeping 30 runs. */
function finish(store: ItemStore, run: string, finishedAt: number, complete = true) {
  return store.history.finishRun({ task: TASK, run, complete, finishedAt, retention: { runs: 30 } });
}

async function storeRun(
  store: ItemStore,
  run: string,
  at: number,
  list: Record<string, Record<string, unknown>>,
  complete = true,
  pages: PageRow[] = [],
) {
  await store.writeBatch(pages, items(run, at, list), 'update');
  // As the run launcher ends a run: its summary and history's close in one transaction (finishedAt: at + 1).
  return store.endRun(summary(run, at), { complete, retention: { runs: 30 } });
}

const first = { a: { name: 'A', price: 10 }, b: { name: 'B', price: 20 }, c: { name: 'C', price: 30 } };
const second = { a: { name: 'A', price: 12 }, b: { name: 'B', price: 20 }, d: { name: 'D', price: 40 } };

function historyContract(name: string, make: (opts?: { history?: boolean; same?: boolean }) => Promise<ItemStore>) {
  describe(`item history: ${name}`, () => {
    let store: ItemStore;
    beforeEach(async () => {
      store = await make();
    });
    afterEach(async () => {
      await store?.close();
    });

    it('records added, changed (old -> new) and removed items of a complete run, and nothing for an unchanged one', async () => {
      const r1 = await storeRun(store, 'r1', 1000, first);
      assert.deepEqual([r1.added, r1.changed, r1.removed], [3, 0, 0]);
      const r2 = await storeRun(store, 'r2', 2000, second);
      assert.deepEqual([r2.added, r2.changed, r2.removed, r2.complete], [1, 1, 1, true]);
      const changes = await store.history.changes({ task: TASK, runs: ['r2'] });
      assert.deepEqual(
        changes.map((c) => [c.kind, c.key, c.field, c.old, c.new]),
        [
          ['changed', 'a', 'price', 10, 12],
          ['removed', 'c', null, { name: 'C', price: 30 }, undefined],
          ['added', 'd', null, undefined, { name: 'D', price: 40 }],
        ].sort((x, y) => String(x[1]).localeCompare(String(y[1]))),
      );
      assert.deepEqual(
        (await store.history.runs(TASK)).map((r) => [r.run, r.added, r.changed, r.removed]),
        [
          ['r1', 3, 0, 0],
          ['r2', 1, 1, 1],
        ],
      );
    });

    it("reads a run's changed items whole, and its counts, as every view shows them (history/query.ts)", async () => {
      await storeRun(store, 'r1', 1000, first);
      // An incomplete run after the complete one: the default run of a change view stays the complete one.
      await storeRun(store, 'r2', 2000, second);
      await storeRun(store, 'r3', 3000, { a: { name: 'A', price: 12 } }, false);
      const runs = await store.history.runs(TASK);
      assert.equal(defaultChangeRun(runs)?.run, 'r2');
      assert.deepEqual(await runChangeCounts(store, TASK, 'r2'), runs[1]);
      assert.equal(await runChangeCounts(store, TASK, 'nosuch'), null);
      const rows = await changedItems(store, TASK, 'r2');
      assert.deepEqual(
        rows.map((r) => [r.kind, r.key, r.data, r.url, r.fields]),
        [
          ['changed', 'a', { name: 'A', price: 12 }, 'https://shop.test/a', [{ field: 'price', old: 10, new: 12 }]],
          ['removed', 'c', { name: 'C', price: 30 }, 'https://shop.test/c', []],
          ['added', 'd', { name: 'D', price: 40 }, 'https://shop.test/d', []],
        ],
      );
      assert.deepEqual(
        (await changedItems(store, TASK, 'r1', { type: 'product' })).map((r) => `${r.kind}:${r.key}`),
        ['added:a', 'added:b', 'added:c'],
      );
      assert.deepEqual(await changedItems(store, TASK, 'r1', { type: 'other' }), []);
    });

    it("closing one run from two stores at once (a stopped run's driver and a writer) gives both its counts, recorded once", async () => {
      await storeRun(store, 'r1', 1000, first);
      await store.writeBatch([], items('r2', 2000, second), 'update');
      const other = await make({ same: true });
      try {
        // Each close writes the run's summary row first: the second waits on it (PostgreSQL's row lock, SQLite's
        // write lock), then finds the run closed and returns its counts as recorded.
        const close = { complete: false, retention: { runs: 30 } };
        const [a, b] = await Promise.all([
          store.endRun(summary('r2', 2000), close),
          other.endRun(summary('r2', 2000), close),
        ]);
        assert.deepEqual(a, b);
        assert.deepEqual([a.added, a.changed, a.removed, a.complete], [1, 1, 0, false]);
        assert.equal((await store.history.runs(TASK)).filter((r) => r.run === 'r2').length, 1);
      } finally {
        await other.close();
      }
    });

    it('storing the same batch twice, or closing a run twice, records nothing new', async () => {
      await storeRun(store, 'r1', 1000, first);
      const batch = items('r2', 2000, second);
      await store.writeBatch([], batch, 'update');
      await store.writeBatch([], batch, 'update');
      const close = { complete: true, retention: { runs: 30 } };
      const once = await store.endRun(summary('r2', 2000), close);
      // The run's end again (a retried finish): its summary is rewritten, its history's close returned as recorded.
      const again = await store.endRun(summary('r2', 2005), close);
      const twice = await finish(store, 'r2', 9999);
      assert.deepEqual(again, once);
      assert.deepEqual(twice, once);
      assert.deepEqual(
        (await store.readRuns()).filter((r) => r.run === 'r2').map((r) => r.finishedAt),
        [2006],
      );
      assert.equal((await store.history.changes({ task: TASK, runs: ['r2'] })).length, 3);
      // A replay of the batch after the run closed changes nothing either.
      await store.writeBatch([], batch, 'update');
      assert.equal((await store.history.changes({ task: TASK, runs: ['r2'] })).length, 3);
    });

    it('an item seen twice in a run is one change: the run’s first old value, its last new one', async () => {
      await storeRun(store, 'r1', 1000, first);
      await store.writeBatch(
        [],
        items('r2', 2000, { a: { name: 'A', price: 12 }, d: { name: 'D', price: 40 } }),
        'update',
      );
      await store.writeBatch(
        [],
        items('r2', 2001, { a: { name: 'A', price: 13 }, d: { name: 'D', price: 41 } }),
        'update',
      );
      await store.writeBatch([], items('r2', 2000, { a: { name: 'A', price: 12 } }), 'update'); // a late replay
      await store.writeRunSummary(summary('r2', 2000));
      const counts = await finish(store, 'r2', 2002, false);
      assert.deepEqual([counts.added, counts.changed, counts.removed], [1, 1, 0]);
      assert.deepEqual(
        (await store.history.changes({ task: TASK, runs: ['r2'] })).map((c) => [c.kind, c.key, c.field, c.old, c.new]),
        [
          ['changed', 'a', 'price', 10, 13],
          ['added', 'd', null, undefined, { name: 'D', price: 41 }],
        ],
      );
    });

    it('a run that was not complete marks nothing removed; the next complete one does', async () => {
      await storeRun(store, 'r1', 1000, first);
      const partial = await storeRun(store, 'r2', 2000, { a: first.a }, false);
      assert.deepEqual([partial.added, partial.changed, partial.removed, partial.complete], [0, 0, 0, false]);
      const full = await storeRun(store, 'r3', 3000, { a: first.a, b: first.b });
      assert.deepEqual([full.removed], [1]);
      assert.deepEqual(
        (await store.history.changes({ task: TASK, runs: ['r3'] })).map((c) => [c.kind, c.key]),
        [['removed', 'c']],
      );
    });

    it('items of a page the site answered 304 stay present; a removed item that comes back is added again', async () => {
      await storeRun(store, 'r1', 1000, first);
      const unchanged: PageRow = {
        run: 'r2',
        url: 'https://shop.test/c',
        method: 'GET',
        body: '',
        rule: 'detail',
        depth: 1,
        status: 304,
        fetchedAt: 2000,
        contentType: null,
        bytes: 0,
      };
      const r2 = await storeRun(store, 'r2', 2000, { a: first.a, b: first.b }, true, [unchanged]);
      assert.equal(r2.removed, 0);
      await storeRun(store, 'r3', 3000, { a: first.a });
      const r4 = await storeRun(store, 'r4', 4000, { a: first.a, b: first.b });
      assert.deepEqual([r4.added, r4.removed], [1, 0]);
    });

    it('items stored before the store kept history are added by the first run that keeps it, then unchanged', async () => {
      await store.close();
      const before = await make({ history: false, same: true });
      await before.writeBatch([], items('r1', 1000, first), 'update');
      await before.close();
      store = await make({ same: true });
      const r2 = await storeRun(store, 'r2', 2000, first);
      assert.deepEqual([r2.added, r2.changed, r2.removed], [3, 0, 0]);
      const added = await store.history.changes({ task: TASK, runs: ['r2'] });
      assert.deepEqual(
        added.map((c) => [c.kind, c.key, c.new]),
        [
          ['added', 'a', first.a],
          ['added', 'b', first.b],
          ['added', 'c', first.c],
        ],
      );
      const r3 = await storeRun(store, 'r3', 3000, { a: first.a, b: { name: 'B', price: 21 } });
      assert.deepEqual([r3.added, r3.changed, r3.removed], [0, 1, 1]);
      assert.deepEqual(
        (await store.history.changes({ task: TASK, runs: ['r3'] })).map((c) => [c.kind, c.key, c.old, c.new]),
        [
          ['changed', 'b', 20, 21],
          ['removed', 'c', first.c, undefined],
        ],
      );
    });

    it('with policy ignore (item rows keep their first data) history still sees unchanged, changed and gone items', async () => {
      const finished = [];
      for (const [run, at, list] of [
        ['r1', 1000, first],
        ['r2', 2000, { a: first.a, b: { name: 'B', price: 21 } }],
      ] as const) {
        await store.writeBatch([], items(run, at, list), 'ignore');
        await store.writeRunSummary(summary(run, at));
        finished.push(
          await store.history.finishRun({
            task: TASK,
            run,
            complete: true,
            finishedAt: at + 1,
            retention: { runs: 30 },
          }),
        );
      }
      const r2 = finished[1]!;
      assert.deepEqual([r2.added, r2.changed, r2.removed], [0, 1, 1]);
      assert.deepEqual(
        (await store.history.changes({ task: TASK, runs: ['r2'] })).map((c) => [c.kind, c.key]),
        [
          ['changed', 'b'],
          ['removed', 'c'],
        ],
      );
    });

    it('keeps only the last N runs of history', async () => {
      for (let i = 1; i <= 4; i++) {
        await store.writeBatch([], items(`r${i}`, i * 1000, { a: { price: i } }), 'update');
        await store.writeRunSummary(summary(`r${i}`, i * 1000));
        await store.history.finishRun({
          task: TASK,
          run: `r${i}`,
          complete: true,
          finishedAt: i * 1000 + 1,
          retention: { runs: 2 },
        });
      }
      assert.deepEqual(
        (await store.history.runs(TASK)).map((r) => r.run),
        ['r3', 'r4'],
      );
      assert.equal((await store.history.changes({ task: TASK, runs: ['r1', 'r2'] })).length, 0);
      assert.deepEqual(
        (await store.history.changes({ task: TASK, runs: ['r4'] })).map((c) => [c.old, c.new]),
        [[3, 4]],
      );
    });

    it('keeps only the last N days of history', async () => {
      const day = 86_400_000;
      for (const [i, at] of [
        [1, 0],
        [2, 5 * day],
        [3, 10 * day],
      ] as const) {
        await store.writeBatch([], items(`r${i}`, at + 1, { a: { price: i } }), 'update');
        await store.writeRunSummary(summary(`r${i}`, at + 1));
        await store.history.finishRun({
          task: TASK,
          run: `r${i}`,
          complete: true,
          finishedAt: at + 2,
          retention: { ms: 7 * day },
        });
      }
      assert.deepEqual(
        (await store.history.runs(TASK)).map((r) => r.run),
        ['r2', 'r3'],
      );
    });
  });
}

/**
 * A store as the version before kept history (the state in a table of its own, item_state, and none in the rows),
 * made from a current one after its first run by the `old` statements; opening it again moves the state into the
 * rows (`moved`: 1 for an item_state table, plus 2 for history's columns in the rows). Item
 * `b` had its state differ from its row, as policy ignore left it: history's own values must come over.
 */
async function movedIntoRows(
  open: () => Promise<ItemStore>,
  old: (sql: (prefix: string, data: string, rowMs: string) => string[]) => Promise<unknown>,
  moved: () => Promise<number>,
): Promise<void> {
  let store = await open();
  await storeRun(store, 'r1', 1_000, first);
  await store.close();
  await old((prefix, data, rowMs) => [
    `CREATE TABLE ${prefix}item_state (
      type text NOT NULL, key text NOT NULL, first_run text NOT NULL, last_run text NOT NULL, removed_run text,
      data ${data} NOT NULL, url text NOT NULL, fetched_at bigint NOT NULL, PRIMARY KEY (type, key))`,
    `INSERT INTO ${prefix}item_state SELECT 'product', t.key, t.first_run, t.run, t.removed_run, t.data, t.url, ${rowMs}
       FROM ${prefix}items_product t`,
    `UPDATE ${prefix}item_state SET data = '{"name":"B","price":21}' WHERE key = 'b'`,
    ...['first_run', 'removed_run', 'seen_run', 'seen_data', 'seen_url', 'seen_at'].map(
      (col) => `ALTER TABLE ${prefix}items_product DROP COLUMN ${col}`,
    ),
  ]);
  assert.equal(await moved(), 1, 'the old layout: item_state, and no history columns in the rows');
  store = await open();
  try {
    const counts = await storeRun(store, 'r2', 2_000, { ...second, b: { name: 'B', price: 21 } });
    assert.equal(await moved(), 2, 'item_state is gone, the rows have history columns');
    assert.deepEqual([counts.added, counts.changed, counts.removed], [1, 1, 1]);
    const changes = await store.history.changes({ task: TASK, runs: ['r2'] });
    assert.deepEqual(
      changes.map((x) => `${x.kind} ${x.key}${x.field ? ` ${x.field} ${String(x.old)} -> ${String(x.new)}` : ''}`),
      ['changed a price 10 -> 12', 'removed c', 'added d'],
    );
  } finally {
    await store.close();
  }
}

describe('item history', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cs-history-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  let n = 0;
  historyContract('sqlite', (o = {}) =>
    openStore(`sqlite:${join(dir, `h${o.same ? n : ++n}.sqlite`)}`, { history: o.history }),
  );

  it('sqlite: a store made before (version 3), its item state in item_state, is moved into the item rows on opening', async () => {
    const file = join(dir, 'before-rows.sqlite');
    const { DatabaseSync } = await import('node:sqlite');
    const raw = (fn: (db: InstanceType<typeof DatabaseSync>) => unknown) => {
      const db = new DatabaseSync(file);
      try {
        return fn(db);
      } finally {
        db.close();
      }
    };
    await movedIntoRows(
      () => openStore(`sqlite:${file}`),
      async (sql) =>
        raw((db) => {
          for (const q of sql('', 'text', 't.fetched_at')) db.exec(q);
          db.exec('PRAGMA user_version = 3');
        }),
      async () =>
        Number(
          raw(
            (db) =>
              db
                .prepare(
                  `SELECT (SELECT count(*) FROM sqlite_master WHERE name = 'item_state') + 2 * (SELECT count(*) FROM pragma_table_info('items_product') WHERE name = 'first_run') AS n`,
                )
                .get()!.n,
          ),
        ),
    );
  });

  describe('on PostgreSQL', () => {
    let server: PostgresServer | null = null;
    before(async function () {
      server = await postgresForSuite(this);
    });
    after(async () => {
      await server?.destroy();
    });
    historyContract('postgres', (o = {}) =>
      openStore(server!.url, { task: `history-${o.same ? n : ++n}`, history: o.history }),
    );

    it('a store made before, its item state in item_state, is moved into the item rows on opening', async () => {
      const task = 'history_item_state';
      const schema = `crawl_${task}`;
      const c = new pg.Client({ connectionString: server!.url });
      await c.connect();
      try {
        await movedIntoRows(
          () => openStore(server!.url, { task }),
          async (sql) => {
            for (const q of sql(`${schema}.`, 'jsonb', `round(extract(epoch from t.fetched_at) * 1000)::bigint`))
              await c.query(q);
          },
          async () =>
            (
              await c.query<{ n: number }>(
                `SELECT (to_regclass('${schema}.item_state') IS NOT NULL)::int + 2 * (SELECT count(*)::int FROM pg_attribute
                   WHERE attrelid = to_regclass('${schema}.items_product') AND attname = 'first_run') AS n`,
              )
            ).rows[0]!.n,
        );
      } finally {
        await c.end();
      }
    });
  });
});
