import { strict as assert } from 'node:assert';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteStore } from '../../src/store/sqlite';
import type { ItemRow } from '../../src/store/types';
import { sqliteShell as sqlite3 } from '../support/sqliteShell';

// Issue 22, item 1: people open the store in the sqlite3 shell, DB Browser, Datasette or a notebook while a crawl
// writes it. The WASM SQLite used before took a lock that other SQLite builds cannot see: they took its live
// journal for a crashed writer's and rolled it back under it (items lost and duplicated, "database disk image is
// malformed"). Here two sqlite3 shells (a separate SQLite build, opening read-write as they do by default) read
// the file in a loop while the store writes 100,000 items in 200 batches: every item must be stored once, every
// read must see whole batches only, and the file must pass integrity_check.

const BATCHES = 200;
const PER_BATCH = 500;

function batch(b: number): ItemRow[] {
  return Array.from({ length: PER_BATCH }, (_, i) => {
    const k = b * PER_BATCH + i;
    return {
      type: 'product',
      key: `sku-${k}`,
      json: JSON.stringify({ sku: `sku-${k}`, name: `Product ${k}` }),
      fields: ['sku', 'name'],
      url: `https://shop.test/p/${k}`,
      rule: 'detail',
      run: 'r1',
      fetchedAt: 1_700_000_000_000 + k,
    };
  });
}

describe('store: SQLite read by other SQLite programs while it writes (issue 22, item 1)', function () {
  this.timeout(180_000);
  let dir: string;
  before(() => (dir = mkdtempSync(join(tmpdir(), 'cs-reader-'))));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('two sqlite3 shells reading in a loop: every item stored once, every read a whole number of batches, integrity ok', async () => {
    const file = join(dir, 'shop.sqlite');
    const store = new SqliteStore(file);
    await store.open();
    await store.writeBatch([], batch(0), 'ignore');
    const table = (await sqlite3(file, "SELECT table_name FROM item_types WHERE type = 'product';")).out.trim();
    assert.ok(table, 'the item table exists');

    let writing = true;
    const problems: string[] = [];
    let reads = 0;
    const reader = async () => {
      while (writing) {
        const r = await sqlite3(file, `SELECT count(*), count(DISTINCT key) FROM "${table}";`);
        if (r.err) {
          // A busy answer is what a reader may get; anything else (malformed, I/O error) is the bug.
          if (!/database is locked|database is busy/i.test(r.err)) problems.push(r.err.trim());
          continue;
        }
        const [rows, keys] = r.out.trim().split(' ').map(Number);
        if (rows !== keys) problems.push(`${rows} rows, ${keys} distinct keys`);
        else if (rows! % PER_BATCH !== 0) problems.push(`a read saw ${rows} rows: part of a batch`);
        reads++;
      }
    };
    const readers = [reader(), reader()];
    let writeError: unknown = null;
    try {
      for (let b = 1; b < BATCHES; b++) {
        await store.writeBatch([], batch(b), 'ignore');
        // The crawl's writer also waits between batches (for the stream to fill); this lets the readers run.
        await new Promise((r) => setTimeout(r, 10));
      }
    } catch (err) {
      writeError = err;
    } finally {
      writing = false;
      await Promise.all(readers);
    }
    assert.equal(writeError, null, `the store failed while being read: ${(writeError as Error)?.message}`);
    assert.deepEqual(problems.slice(0, 5), [], `${problems.length} bad reads`);
    assert.ok(reads >= 10, `only ${reads} reads happened while writing`);
    assert.equal(await store.count('product'), BATCHES * PER_BATCH);
    await store.close();
    const check = await sqlite3(file, `PRAGMA integrity_check; SELECT count(*), count(DISTINCT key) FROM "${table}";`);
    assert.equal(check.err, '');
    assert.deepEqual(check.out.trim().split('\n'), ['ok', `${BATCHES * PER_BATCH} ${BATCHES * PER_BATCH}`]);
  });
});
