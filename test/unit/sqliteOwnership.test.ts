import { strict as assert } from 'node:assert';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteStore } from '../../src/store/sqlite';
import { loadSqlite } from '../../src/store/sqliteDriver';
/** Crawl Studio's SQLite application_id, "CSTD": pinned here, since files in the wild carry it. */
const SQLITE_APPLICATION_ID = 0x43535444;

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
      await assert.rejects(
        store.open(),
        (err: Error) =>
          err.message.includes(path) &&
          /not a Crawl Studio store/.test(err.message) &&
          /accounts/.test(err.message) &&
          /Nothing was written/.test(err.message),
      );
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

  describe('SQLite store schema 1 to 2 (pages are requests, issue 17)', () => {
    let dir: string;
    beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'cs-schema-'))));
    afterEach(() => rmSync(dir, { recursive: true, force: true }));

    it('adds method and body to the page rows a version 1 store has, keeping them, and keys pages by request', async () => {
      const path = join(dir, 'v1.sqlite');
      const db = Database(path);
      db.exec(`CREATE TABLE item_types (type TEXT PRIMARY KEY, table_name TEXT NOT NULL UNIQUE, fields TEXT NOT NULL DEFAULT '[]', created_at INTEGER NOT NULL);
CREATE TABLE pages (id INTEGER PRIMARY KEY, run TEXT NOT NULL, url TEXT NOT NULL, rule TEXT, depth INTEGER, status INTEGER, fetched_at INTEGER NOT NULL, content_type TEXT, bytes INTEGER NOT NULL DEFAULT 0);
CREATE UNIQUE INDEX pages_run_url ON pages (run, url);
CREATE TABLE errors (id INTEGER PRIMARY KEY, error_id TEXT NOT NULL, kind TEXT NOT NULL, run TEXT, url TEXT, rule TEXT, type TEXT, key TEXT, message TEXT NOT NULL, at INTEGER NOT NULL);
CREATE TABLE runs (run TEXT PRIMARY KEY, task TEXT NOT NULL, started_at INTEGER NOT NULL, finished_at INTEGER NOT NULL, duration_ms INTEGER NOT NULL, pages INTEGER NOT NULL, items INTEGER NOT NULL, duplicates INTEGER NOT NULL, conflicts INTEGER NOT NULL, failures INTEGER NOT NULL, extra TEXT);
INSERT INTO pages (run, url, rule, depth, status, fetched_at, bytes) VALUES ('r1', 'https://shop.test/search', 'list', 0, 200, 1000, 5);
PRAGMA user_version = 1; PRAGMA application_id = ${SQLITE_APPLICATION_ID};`);
      db.close();
      const store = new SqliteStore(path);
      await store.open();
      const row = {
        run: 'r1',
        url: 'https://shop.test/search',
        rule: 'results',
        depth: 1,
        status: 200,
        fetchedAt: 2000,
        contentType: 'text/html',
        bytes: 9,
      };
      await store.writeBatch(
        [
          { ...row, method: 'POST', body: 'q=shoes' },
          { ...row, method: 'GET', body: '' },
        ],
        [],
        'update',
      );
      assert.equal(
        await store.countPages(),
        2,
        'the GET row kept (updated), the POST of the same URL a row of its own',
      );
      await store.close();
      const check = Database(path);
      assert.equal(Number(check.prepare('PRAGMA user_version').get()?.user_version), 4);
      const rows = check.prepare('SELECT method, body, rule FROM pages ORDER BY method').all();
      check.close();
      assert.deepEqual(
        rows.map((r) => ({ ...r })),
        [
          { method: 'GET', body: '', rule: 'results' },
          { method: 'POST', body: 'q=shoes', rule: 'results' },
        ],
      );
    });
  });
});
