import { strict as assert } from 'node:assert';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadSqlite, SQLITE_APPLICATION_ID, SqliteStore } from '../../src/store/sqlite';

const Database = (path: string) => new (loadSqlite(path).DatabaseSync)(path);

// Issue 22, item 5: a task file pointing its store at another application's SQLite file must not add tables to
// it or change its user_version. Real SQLite files in a temporary folder.

describe('task file store ownership (issue 22)', () => {
  describe('SQLite store ownership (PRAGMA application_id)', () => {
    let dir: string;
    beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'cs-appid-'))));
    afterEach(() => rmSync(dir, { recursive: true, force: true }));
    const hash = (p: string) => createHash('sha256').update(readFileSync(p)).digest('hex');
    const pragma = (p: string, name: string) => {
      const db = Database(p);
      try {
        return Number(db.prepare(`PRAGMA ${name}`).get()?.[name]);
      } finally {
        db.close();
      }
    };

    it("refuses another application's database, naming it, and writes nothing", async () => {
      const path = join(dir, 'other-app.db');
      const db = Database(path);
      db.exec('CREATE TABLE accounts (id INTEGER PRIMARY KEY, name TEXT); PRAGMA user_version = 7');
      db.close();
      const before = hash(path);
      const store = new SqliteStore(path, { busyTimeoutMs: 500 });
      await assert.rejects(store.open(), (err: Error) => err.message.includes(path) && /not a Crawl Studio store/.test(err.message) && /accounts/.test(err.message) && /Nothing was written/.test(err.message));
      await store.close();
      assert.equal(hash(path), before, 'the file is unchanged');
      assert.equal(pragma(path, 'user_version'), 7);
    });

    it('refuses a database carrying another application_id, even when empty', async () => {
      const path = join(dir, 'tagged.db');
      const db = Database(path);
      db.exec('PRAGMA application_id = 1234');
      db.close();
      const store = new SqliteStore(path, { busyTimeoutMs: 500 });
      await assert.rejects(store.open(), /application_id is 0x000004d2/);
      await store.close();
    });

    it('marks a new file as a Crawl Studio store, and adopts a store made before the mark', async () => {
      const path = join(dir, 'new.sqlite');
      const s = new SqliteStore(path);
      await s.open();
      await s.close();
      assert.equal(pragma(path, 'application_id') >>> 0, SQLITE_APPLICATION_ID);
      // A store from an earlier version: our tables and user_version 1, no application_id.
      const db = Database(path);
      db.exec('PRAGMA application_id = 0');
      db.close();
      const again = new SqliteStore(path);
      await again.open();
      await again.close();
      assert.equal(pragma(path, 'application_id') >>> 0, SQLITE_APPLICATION_ID);
    });
  });
});
