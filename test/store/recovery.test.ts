import { strict as assert } from 'node:assert';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteStore } from '../../src/store/sqlite';
import { loadSqlite } from '../../src/store/sqliteDriver';
import type { ItemRow } from '../../src/store/types';

// A process killed in the middle of a SQLite transaction leaves pages of it behind (in WAL mode, uncommitted frames
// in the -wal file). The next process to open the file must see only what was committed. (The WASM SQLite used
// before node:sqlite needed a patched VFS for this; the writer-crash suite met it as "database disk image is
// malformed".) This keeps it covered.
//
// The kill is made deterministic: a child updates every stored item with a 20-page cache, so SQLite has to spill
// changed pages into the database file before the transaction ends, and is killed once that happened.

const ITEMS = 3000;

function rows(n: number): ItemRow[] {
  return Array.from({ length: n }, (_, i) => ({
    type: 'product',
    key: `sku-${i}`,
    json: JSON.stringify({ sku: `sku-${i}`, name: `Product ${i} ${'z'.repeat(200)}` }),
    fields: ['sku', 'name'],
    url: `https://shop.test/p/${i}`,
    rule: 'detail',
    run: 'r1',
    fetchedAt: 1_700_000_000_000 + i,
  }));
}

const CHILD = `
const db = new (require('node:sqlite').DatabaseSync)(process.argv[1]);
const table = db.prepare("SELECT table_name FROM item_types WHERE type = 'product'").get().table_name;
db.exec('PRAGMA cache_size = 20');
db.exec('BEGIN');
db.exec('UPDATE "' + table + '" SET data = data || \\'' + 'y'.repeat(300) + '\\'');
db.exec('DELETE FROM "' + table + '" WHERE rowid % 3 = 0');
process.stdout.write('spilled\\n');
setInterval(() => {}, 1000);
`;

/** Runs CHILD on `file` and SIGKILLs it once its uncommitted pages are in the file. */
function killMidTransaction(file: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--disable-warning=ExperimentalWarning', '-e', CHILD, file], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.stdout.on('data', (d: Buffer) => {
      if (String(d).includes('spilled')) child.kill('SIGKILL');
    });
    child.on('exit', (code, signal) =>
      signal === 'SIGKILL' ? resolve() : reject(new Error(`child exited ${code} before the kill: ${err}`)),
    );
  });
}

describe('store: SQLite recovers a transaction killed mid-way (sqlite)', function () {
  this.timeout(60_000);
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'cs-recovery-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('keeps every committed item as it was and nothing of the killed transaction', async () => {
    const file = join(dir, 'shop.sqlite');
    const store = new SqliteStore(file);
    await store.open();
    await store.writeBatch([], rows(ITEMS), 'ignore');
    await store.close();
    // The items' column is what the child rewrites: make sure it is there under the name it uses.
    const probe = new (loadSqlite(file).DatabaseSync)(file);
    const table = String(probe.prepare("SELECT table_name FROM item_types WHERE type = 'product'").get()!.table_name);
    assert.ok(
      probe
        .prepare(`PRAGMA table_info("${table}")`)
        .all()
        .some((c) => c.name === 'data'),
      `no data column in ${table}`,
    );
    probe.close();

    await killMidTransaction(file);
    assert.ok(existsSync(`${file}-wal`), 'the killed transaction left its frames in the WAL');

    const reopened = new SqliteStore(file);
    await reopened.open();
    try {
      assert.equal(await reopened.count('product'), ITEMS);
      let n = 0;
      for await (const item of reopened.iterateItems('product', { pageSize: 1000 })) {
        assert.equal(item.data.name, `Product ${item.key.slice(4)} ${'z'.repeat(200)}`, `item ${item.key} changed`);
        n++;
      }
      assert.equal(n, ITEMS);
    } finally {
      await reopened.close();
    }
    const check = new (loadSqlite(file).DatabaseSync)(file);
    try {
      assert.deepEqual(
        check
          .prepare('PRAGMA integrity_check')
          .all()
          .map((r) => ({ ...r })),
        [{ integrity_check: 'ok' }],
      );
    } finally {
      check.close();
    }
  });
});
