import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type { DatabaseSync, SQLInputValue, StatementSync } from 'node:sqlite';
import { itemTableName, mergeFieldNames, ORDER_COLUMNS, quoteIdent } from './tables';
import { historySchema, ItemHistoryLog } from './history/log';
import { sqliteHistorySql } from './history/sqlite';
import {
  StoreDataError,
  StoreUnavailableError,
  type ConflictPolicy,
  type ErrorRow,
  type ItemRow,
  type ItemStore,
  type PageRow,
  type ReadOptions,
  type RunItems,
  type RunSummary,
  type StoredError,
  type StoredItem,
  type StoredRevisit,
  type WriteResult,
} from './types';

// The default, embedded store: one SQLite file per task in the workspace.
//
// Why node:sqlite: it is the SQLite that Node itself ships (Node >= 22.13, the Node in VS Code >= 1.101's
// extension host), so there is no native module to rebuild per Electron ABI and nothing to download, and it uses
// SQLite's own VFS: standard POSIX / Windows file locks and shared memory. That is what makes the file safe to open
// in the sqlite3 shell, DB Browser, Datasette or a notebook while a crawl writes it (issue 22, item 1: the WASM
// SQLite used before took a private lock directory that every other SQLite ignored, so they rolled its live
// journal back as a hot one and corrupted the store). It also gives WAL: readers never block the writer and
// always see the last committed batch, never half of one.
//
// - Every call is synchronous, and SQLite's busy_timeout would sleep synchronously and freeze the extension
//   host, so it stays 0 and a busy database is retried here with async sleeps. With WAL only writers contend
//   (another writer process, or a reader tool holding a write transaction).
// - Statements never keep stepping across an await (reads are paged with `all()`), so no read transaction stays
//   open while a consumer is slow and the WAL can always be checkpointed.
// - A process killed mid-batch leaves uncommitted WAL frames that the next opener ignores: nothing to clean up.

export interface SqliteStoreOptions {
  /** How long to retry a locked database before reporting it unavailable. */
  readonly busyTimeoutMs?: number;
}

type Row = Record<string, SQLInputValue>;

let sqliteModule: typeof import('node:sqlite') | null = null;

/**
 * Loads node:sqlite on first use (not at import: every CLI command and worker bundles this module), without the
 * ExperimentalWarning Node 22 prints for it, which would land in every user's terminal and the extension host log.
 */
export function loadSqlite(path: string): typeof import('node:sqlite') {
  if (sqliteModule) return sqliteModule;
  const emit = process.emitWarning;
  process.emitWarning = function (this: unknown, warning: string | Error, ...rest: unknown[]) {
    const text = typeof warning === 'string' ? warning : warning?.message;
    if (/SQLite is an experimental feature/.test(String(text))) return;
    return (emit as (...a: unknown[]) => void).call(process, warning, ...rest);
  } as typeof process.emitWarning;
  try {
    sqliteModule = require('node:sqlite') as typeof import('node:sqlite');
    return sqliteModule;
  } catch (err) {
    throw new StoreUnavailableError(
      `cannot open SQLite store ${path}: this Node (${process.version}) has no built-in SQLite (node:sqlite, Node 22.13 or newer). ` +
        'Run the CLI with Node 22.13+, use VS Code 1.101 or newer, or set store.url to a postgres:// URL',
      { cause: err },
    );
  } finally {
    process.emitWarning = emit;
  }
}

/** Binds undefined as NULL: node:sqlite refuses undefined, and optional row fields are often absent. */
function bind(values: readonly unknown[]): SQLInputValue[] {
  return values.map((v) => (v === undefined ? null : (v as SQLInputValue)));
}

/**
 * 2: pages are requests (method and body columns, one row per run, URL, method and body).
 * 3: page_validators (conditional re-crawl): added by BASE_SCHEMA, nothing else changes.
 */
const SCHEMA_VERSION = 3;

/** Version 1 to 2, in the caller's transaction: a store's page rows were one per URL, GETs all. */
function migrateToRequests(db: DatabaseSync): void {
  db.exec(`ALTER TABLE pages ADD COLUMN method TEXT NOT NULL DEFAULT 'GET';
ALTER TABLE pages ADD COLUMN body TEXT NOT NULL DEFAULT '';
DROP INDEX IF EXISTS pages_run_url;`);
}

/**
 * `PRAGMA application_id` of a Crawl Studio store ("CSTD"), set when the schema is created: a file that carries
 * another id, or none while holding another application's tables, is refused untouched instead of being given
 * our tables and user_version. (Stores made before the id existed are recognised by their tables and adopted.)
 */
export const SQLITE_APPLICATION_ID = 0x43535444;

/** The tables every Crawl Studio store has had since version 1. */
const BASE_TABLES = ['item_types', 'pages', 'errors', 'runs'];

const BASE_SCHEMA = `
CREATE TABLE IF NOT EXISTS item_types (
  type TEXT PRIMARY KEY,
  table_name TEXT NOT NULL UNIQUE,
  fields TEXT NOT NULL DEFAULT '[]',
  created_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS pages (
  id INTEGER PRIMARY KEY,
  run TEXT NOT NULL,
  url TEXT NOT NULL,
  rule TEXT,
  depth INTEGER,
  status INTEGER,
  fetched_at INTEGER NOT NULL,
  content_type TEXT,
  bytes INTEGER NOT NULL DEFAULT 0,
  method TEXT NOT NULL DEFAULT 'GET',
  body TEXT NOT NULL DEFAULT ''
);
CREATE UNIQUE INDEX IF NOT EXISTS pages_run_request ON pages (run, url, method, body);
CREATE TABLE IF NOT EXISTS errors (
  id INTEGER PRIMARY KEY,
  error_id TEXT NOT NULL,
  kind TEXT NOT NULL,
  run TEXT,
  url TEXT,
  rule TEXT,
  type TEXT,
  key TEXT,
  message TEXT NOT NULL,
  at INTEGER NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS errors_error_id ON errors (error_id);
CREATE TABLE IF NOT EXISTS runs (
  run TEXT PRIMARY KEY,
  task TEXT NOT NULL,
  started_at INTEGER NOT NULL,
  finished_at INTEGER NOT NULL,
  duration_ms INTEGER NOT NULL,
  pages INTEGER NOT NULL,
  items INTEGER NOT NULL,
  duplicates INTEGER NOT NULL,
  conflicts INTEGER NOT NULL,
  failures INTEGER NOT NULL,
  extra TEXT
);
CREATE TABLE IF NOT EXISTS page_validators (
  url TEXT PRIMARY KEY,
  final_url TEXT NOT NULL,
  etag TEXT,
  last_modified TEXT,
  shape TEXT NOT NULL,
  items INTEGER NOT NULL DEFAULT 0,
  links BLOB,
  run TEXT NOT NULL,
  fetched_at INTEGER NOT NULL
);
`;

// `data` is declared TEXT, not JSON: SQLite gives an unknown type name NUMERIC affinity, which would turn
// a stored '12' into the integer 12. Times are integer ms since epoch, the unit everything else in the engine
// uses. `id` keeps insertion order for paging and exports.
function itemTableSchema(table: string): string {
  const t = quoteIdent(table);
  return `
CREATE TABLE IF NOT EXISTS ${t} (
  id INTEGER PRIMARY KEY,
  key TEXT NOT NULL,
  data TEXT NOT NULL,
  url TEXT,
  rule TEXT,
  run TEXT,
  fetched_at INTEGER NOT NULL,
  first_seen INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS ${quoteIdent(`${table}_key`)} ON ${t} (key);`;
}

interface TableStatements {
  readonly insert: StatementSync;
  readonly update: StatementSync;
}

export class SqliteStore implements ItemStore {
  readonly kind = 'sqlite';
  readonly location: string;
  readonly path: string;
  /** The journal mode SQLite accepted: 'wal', or 'delete' where the file system cannot share memory. */
  journalMode = 'unknown';
  private db: DatabaseSync | null = null;
  private readonly busyTimeoutMs: number;
  private readonly types = new Map<string, { table: string; fields: string[] }>();
  private readonly statements = new Map<string, TableStatements>();
  private readonly shared = new Map<string, StatementSync>();

  constructor(path: string, opts: SqliteStoreOptions = {}) {
    this.path = resolve(path);
    this.location = `sqlite:${this.path}`;
    this.busyTimeoutMs = opts.busyTimeoutMs ?? 20_000;
    this.history = new ItemHistoryLog(sqliteHistorySql(() => this.conn(), this.path, this.busyTimeoutMs));
  }

  readonly history: ItemHistoryLog;

  async open(): Promise<void> {
    if (this.db) return;
    try {
      mkdirSync(dirname(this.path), { recursive: true });
    } catch (err) {
      throw new Error(`cannot create the folder for SQLite store ${this.path}: ${(err as Error).message} — check that it is writable`);
    }
    const { DatabaseSync: SqliteDatabase } = loadSqlite(this.path);
    await this.withBusyRetry('open', () => {
      let db: DatabaseSync;
      try {
        db = new SqliteDatabase(this.path);
      } catch (err) {
        throw new Error(`cannot open SQLite store ${this.path}: ${(err as Error).message} — check that the file is a SQLite database and the folder is writable`, { cause: err });
      }
      try {
        db.exec('PRAGMA busy_timeout = 0');
        // Before anything that could write (the journal mode, the schema): someone else's database stays as it was.
        this.checkOwnership(db);
        // WAL: other SQLite tools read while we write, and see whole batches only. Where the file system cannot
        // share memory between processes (some network mounts) SQLite keeps its rollback journal; the standard
        // locks still keep every process safe there, readers just wait for a batch to commit.
        this.journalMode = String(get(db, 'PRAGMA journal_mode = WAL')?.journal_mode ?? 'unknown');
        const version = Number(get(db, 'PRAGMA user_version')?.user_version ?? 0);
        if (version > SCHEMA_VERSION) {
          throw new Error(`SQLite store ${this.path} has schema version ${version}, newer than this Crawl Studio understands (${SCHEMA_VERSION}): update the extension`);
        }
        db.exec('BEGIN IMMEDIATE');
        try {
          if (version >= 1 && version < 2) migrateToRequests(db);
          db.exec(BASE_SCHEMA);
          db.exec(historySchema(''));
          db.exec(`PRAGMA user_version = ${SCHEMA_VERSION}`);
          db.exec(`PRAGMA application_id = ${SQLITE_APPLICATION_ID}`);
          db.exec('COMMIT');
        } catch (err) {
          if (db.isTransaction) db.exec('ROLLBACK');
          throw err;
        }
      } catch (err) {
        db.close();
        throw err;
      }
      this.db = db;
      this.loadTypes();
    });
  }

  /** Throws, naming the file, unless it is new, empty, or a Crawl Studio store. Reads only. */
  private checkOwnership(db: DatabaseSync): void {
    const id = Number(get(db, 'PRAGMA application_id')?.application_id ?? 0) >>> 0;
    if (id === SQLITE_APPLICATION_ID) return;
    const names = all(db, `SELECT name FROM sqlite_master WHERE name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name`).map((r) => String(r.name));
    const version = Number(get(db, 'PRAGMA user_version')?.user_version ?? 0);
    if (id === 0 && names.length === 0 && version === 0) return; // a new or empty file
    // Made by a Crawl Studio from before application_id: our tables, one of our schema versions.
    if (id === 0 && version >= 1 && version <= SCHEMA_VERSION && BASE_TABLES.every((t) => names.includes(t))) return;
    const what =
      id !== 0
        ? `its application_id is 0x${id.toString(16).padStart(8, '0')}, not Crawl Studio's (0x${SQLITE_APPLICATION_ID.toString(16)})`
        : `it already holds ${names.length ? `tables of another application (${names.slice(0, 5).join(', ')}${names.length > 5 ? ', …' : ''})` : `user_version ${version}`}`;
    throw new Error(
      `SQLite store ${this.path} is not a Crawl Studio store: ${what}. Nothing was written to it; ` +
        'point store.url at a new file (e.g. sqlite:.crawl/<task>.sqlite)',
    );
  }

  async close(): Promise<void> {
    const db = this.db;
    if (!db) return;
    this.db = null;
    this.statements.clear();
    this.shared.clear();
    db.close();
  }

  async writeBatch(pages: readonly PageRow[], items: readonly ItemRow[], policy: ConflictPolicy, errors: readonly ErrorRow[] = []): Promise<WriteResult> {
    const result = await this.writeRows(pages, items, policy, errors);
    // Before returning: the writer acknowledges the entries only then, so a crash in between replays them.
    await this.history.observe(items);
    return result;
  }

  private writeRows(pages: readonly PageRow[], items: readonly ItemRow[], policy: ConflictPolicy, errors: readonly ErrorRow[]): Promise<WriteResult> {
    return this.withBusyRetry('write a batch', () =>
      this.transaction(() => {
        const now = Date.now();
        this.registerTypes(items, now);
        let pageCount = 0;
        const upsertPage = this.stmt(
          'page',
          `INSERT INTO pages (run, url, method, body, rule, depth, status, fetched_at, content_type, bytes) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
           ON CONFLICT (run, url, method, body) DO UPDATE SET rule = excluded.rule, depth = excluded.depth, status = excluded.status,
             fetched_at = excluded.fetched_at, content_type = excluded.content_type, bytes = excluded.bytes
           WHERE excluded.fetched_at >= pages.fetched_at`,
        );
        for (const p of pages) {
          upsertPage.run(...bind([p.run, p.url, p.method, p.body, p.rule, p.depth, p.status, p.fetchedAt, p.contentType, p.bytes]));
          pageCount++;
          if (p.revisit) this.upsertRevisit(p);
        }
        let inserted = 0;
        let updated = 0;
        let conflicts = 0;
        for (const item of items) {
          const s = this.tableStatements(item.type);
          const r = s.insert.run(...bind([item.key, item.json, item.url, item.rule, item.run, item.fetchedAt, now, now]));
          if (Number(r.changes) > 0) {
            inserted++;
            continue;
          }
          conflicts++;
          if (policy === 'update') {
            // Older fetches never overwrite newer ones: replays and concurrent writers then agree on the result.
            const u = s.update.run(...bind([item.json, item.url, item.rule, item.run, item.fetchedAt, now, item.key, item.fetchedAt]));
            updated += Number(u.changes);
          }
        }
        const errorCount = this.insertErrors(errors);
        return { written: inserted + updated, inserted, updated, conflicts, pages: pageCount, errors: errorCount };
      }),
    );
  }

  async writeErrors(errors: readonly ErrorRow[]): Promise<number> {
    if (errors.length === 0) return 0;
    return this.withBusyRetry('record errors', () => this.transaction(() => this.insertErrors(errors)));
  }

  /** One URL's row, across runs: an older fetch never overwrites a newer one; a 304's record keeps the stored links. */
  private upsertRevisit(p: PageRow): void {
    const r = p.revisit!;
    this.stmt(
      'revisit',
      `INSERT INTO page_validators (url, final_url, etag, last_modified, shape, items, links, run, fetched_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (url) DO UPDATE SET final_url = excluded.final_url, etag = excluded.etag, last_modified = excluded.last_modified,
         shape = excluded.shape, items = excluded.items, links = COALESCE(excluded.links, page_validators.links), run = excluded.run,
         fetched_at = excluded.fetched_at
       WHERE excluded.fetched_at >= page_validators.fetched_at`,
    ).run(...bind([p.url, r.finalUrl, r.etag, r.lastModified, r.shape, r.items, r.links === null ? null : Buffer.from(r.links, 'base64'), p.run, p.fetchedAt]));
  }

  async *iterateRevisits(opts: { pageSize?: number } = {}): AsyncIterable<StoredRevisit> {
    const size = Math.max(1, opts.pageSize ?? 1000);
    let after = 0;
    for (;;) {
      const rows = await this.withBusyRetry('read page validators', () =>
        all(
          this.conn(),
          `SELECT rowid AS id, url, final_url, etag, last_modified, shape, items, links, fetched_at FROM page_validators
           WHERE rowid > ? AND links IS NOT NULL AND (etag IS NOT NULL OR last_modified IS NOT NULL) ORDER BY rowid LIMIT ?`,
          [after, size],
        ),
      );
      for (const r of rows) {
        yield {
          url: String(r.url),
          finalUrl: String(r.final_url),
          etag: nullable(r.etag),
          lastModified: nullable(r.last_modified),
          shape: String(r.shape),
          items: Number(r.items),
          links: Buffer.from(r.links as Uint8Array).toString('base64'),
          fetchedAt: Number(r.fetched_at),
        };
      }
      if (rows.length < size) return;
      after = Number(rows[rows.length - 1]!.id);
    }
  }

  async writeRunSummary(s: RunSummary): Promise<void> {
    await this.withBusyRetry('record the run summary', () => {
      run(
        this.conn(),
        `INSERT INTO runs (run, task, started_at, finished_at, duration_ms, pages, items, duplicates, conflicts, failures, extra)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (run) DO UPDATE SET task = excluded.task, started_at = excluded.started_at, finished_at = excluded.finished_at,
           duration_ms = excluded.duration_ms, pages = excluded.pages, items = excluded.items, duplicates = excluded.duplicates,
           conflicts = excluded.conflicts, failures = excluded.failures, extra = excluded.extra`,
        [s.run, s.task, s.startedAt, s.finishedAt, s.durationMs, s.pages, s.items, s.duplicates, s.conflicts, s.failures, s.extra ? JSON.stringify(s.extra) : null],
      );
    });
  }

  async readRuns(): Promise<RunSummary[]> {
    const rows = await this.withBusyRetry('read runs', () => all(this.conn(), 'SELECT * FROM runs ORDER BY started_at, run'));
    return rows.map((r) => ({
      run: String(r.run),
      task: String(r.task),
      startedAt: Number(r.started_at),
      finishedAt: Number(r.finished_at),
      durationMs: Number(r.duration_ms),
      pages: Number(r.pages),
      items: Number(r.items),
      duplicates: Number(r.duplicates),
      conflicts: Number(r.conflicts),
      failures: Number(r.failures),
      ...(r.extra ? { extra: JSON.parse(String(r.extra)) as Record<string, unknown> } : {}),
    }));
  }

  async readErrors(opts: { offset?: number; limit?: number } = {}): Promise<StoredError[]> {
    const rows = await this.withBusyRetry('read errors', () =>
      all(this.conn(), 'SELECT * FROM errors ORDER BY id LIMIT ? OFFSET ?', [clampLimit(opts.limit), Math.max(0, opts.offset ?? 0)]),
    );
    return rows.map((r) => ({
      id: String(r.error_id),
      kind: String(r.kind) as ErrorRow['kind'],
      run: nullable(r.run),
      url: nullable(r.url),
      rule: nullable(r.rule),
      type: nullable(r.type),
      key: nullable(r.key),
      message: String(r.message),
      at: Number(r.at),
    }));
  }

  async countErrors(): Promise<number> {
    return this.withBusyRetry('count errors', () => Number(get(this.conn(), 'SELECT count(*) AS n FROM errors')?.n ?? 0));
  }

  async countPages(): Promise<number> {
    return this.withBusyRetry('count pages', () => Number(get(this.conn(), 'SELECT count(*) AS n FROM pages')?.n ?? 0));
  }

  async itemTypes(): Promise<string[]> {
    return this.withBusyRetry('list item types', () => {
      this.loadTypes();
      return [...this.types.keys()].sort();
    });
  }

  async fieldNames(type: string): Promise<string[]> {
    return this.withBusyRetry('read field names', () => {
      this.loadTypes();
      return [...(this.types.get(type)?.fields ?? [])];
    });
  }

  async count(type: string): Promise<number> {
    return this.withBusyRetry('count items', () => {
      const table = this.tableOf(type);
      return table ? Number(get(this.conn(), `SELECT count(*) AS n FROM ${quoteIdent(table)}`)?.n ?? 0) : 0;
    });
  }

  async itemRuns(type: string): Promise<RunItems[]> {
    return this.withBusyRetry('count items by run', () => {
      const table = this.tableOf(type);
      if (!table) return [];
      return all(this.conn(), `SELECT run, count(*) AS n, min(fetched_at) AS first FROM ${quoteIdent(table)} GROUP BY run ORDER BY first, run`).map((r) => ({
        run: nullable(r.run),
        items: Number(r.n),
        firstFetchedAt: Number(r.first),
      }));
    });
  }

  async readItems(type: string, opts: ReadOptions = {}): Promise<StoredItem[]> {
    const column = ORDER_COLUMNS[opts.orderBy ?? 'id'];
    if (!column) throw new Error(`cannot order items by '${String(opts.orderBy)}': use one of ${Object.keys(ORDER_COLUMNS).join(', ')}`);
    return this.withBusyRetry('read items', () => {
      const table = this.tableOf(type);
      if (!table) return [];
      const dir = opts.descending ? 'DESC' : 'ASC';
      const rows = all(
        this.conn(),
        `SELECT * FROM ${quoteIdent(table)} ORDER BY ${column} ${dir}, id ${dir} LIMIT ? OFFSET ?`,
        [clampLimit(opts.limit), Math.max(0, opts.offset ?? 0)],
      );
      return rows.map((r) => toItem(type, r));
    });
  }

  async *iterateItems(type: string, opts: { pageSize?: number } = {}): AsyncIterable<StoredItem> {
    const size = Math.max(1, opts.pageSize ?? 1000);
    let after = 0;
    for (;;) {
      // Keyset paging: each page is one short statement, so no lock is held while the consumer awaits.
      const rows = await this.withBusyRetry('read items', () => {
        const table = this.tableOf(type);
        return table ? all(this.conn(), `SELECT * FROM ${quoteIdent(table)} WHERE id > ? ORDER BY id LIMIT ?`, [after, size]) : [];
      });
      for (const r of rows) yield toItem(type, r);
      if (rows.length < size) return;
      after = Number(rows[rows.length - 1]!.id);
    }
  }

  private conn(): DatabaseSync {
    if (!this.db) throw new Error(`SQLite store ${this.path} is not open (call open() first, or it was closed)`);
    return this.db;
  }

  private transaction<T>(fn: () => T): T {
    const db = this.conn();
    db.exec('BEGIN IMMEDIATE');
    try {
      const out = fn();
      db.exec('COMMIT');
      return out;
    } catch (err) {
      if (db.isTransaction) db.exec('ROLLBACK');
      // Types registered inside a rolled-back transaction do not exist: forget every cached type and statement
      // (re-reading the registry here could itself hit a busy lock and mask the original error).
      this.forgetTypes();
      throw err;
    }
  }

  private stmt(name: string, sql: string): StatementSync {
    let s = this.shared.get(name);
    if (!s) {
      s = this.conn().prepare(sql);
      this.shared.set(name, s);
    }
    return s;
  }

  private insertErrors(errors: readonly ErrorRow[]): number {
    if (errors.length === 0) return 0;
    const s = this.stmt(
      'error',
      `INSERT INTO errors (error_id, kind, run, url, rule, type, key, message, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (error_id) DO NOTHING`,
    );
    let n = 0;
    for (const e of errors) n += Number(s.run(...bind([e.id, e.kind, e.run, e.url, e.rule, e.type, e.key, e.message, e.at])).changes);
    return n;
  }

  /** Reads the type registry; other processes may have added types since we last looked. */
  private loadTypes(): void {
    if (!this.db) return;
    const rows = all(this.db, 'SELECT type, table_name, fields FROM item_types');
    const live = new Set<string>();
    for (const r of rows) {
      const type = String(r.type);
      live.add(type);
      this.types.set(type, { table: String(r.table_name), fields: JSON.parse(String(r.fields)) as string[] });
    }
    for (const type of [...this.types.keys()]) {
      if (!live.has(type)) {
        this.types.delete(type);
        this.dropStatements(type);
      }
    }
  }

  private forgetTypes(): void {
    for (const type of [...this.statements.keys()]) this.dropStatements(type);
    this.types.clear();
  }

  private dropStatements(type: string): void {
    // node:sqlite finalizes statements when they are collected: forgetting them is enough.
    this.statements.delete(type);
  }

  /** Creates tables for new types and extends field lists; runs inside the batch transaction (we hold the lock). */
  private registerTypes(items: readonly ItemRow[], now: number): void {
    const byType = new Map<string, Set<string>>();
    for (const item of items) {
      let set = byType.get(item.type);
      if (!set) byType.set(item.type, (set = new Set()));
      for (const f of item.fields) set.add(f);
    }
    let fresh = false;
    for (const [type, fields] of byType) {
      const known = this.types.get(type);
      if (known && !mergeFieldNames(known.fields, fields)) continue;
      if (!fresh) {
        // Another process may have registered the type or new fields meanwhile: decide on current rows.
        this.loadTypes();
        fresh = true;
      }
      const current = this.types.get(type);
      const db = this.conn();
      if (!current) {
        const table = itemTableName(type);
        db.exec(itemTableSchema(table));
        run(db, 'INSERT INTO item_types (type, table_name, fields, created_at) VALUES (?, ?, ?, ?)', [type, table, JSON.stringify([...fields]), now]);
        this.types.set(type, { table, fields: [...fields] });
        continue;
      }
      const merged = mergeFieldNames(current.fields, fields);
      if (merged) {
        run(db, 'UPDATE item_types SET fields = ? WHERE type = ?', [JSON.stringify(merged), type]);
        current.fields = merged;
      }
    }
  }

  private tableOf(type: string): string | null {
    let t = this.types.get(type);
    if (!t) {
      this.loadTypes();
      t = this.types.get(type);
    }
    return t?.table ?? null;
  }

  private tableStatements(type: string): TableStatements {
    let s = this.statements.get(type);
    if (!s) {
      const table = this.tableOf(type);
      if (!table) throw new Error(`internal: item type '${type}' has no table`);
      const t = quoteIdent(table);
      const db = this.conn();
      s = {
        insert: db.prepare(
          `INSERT INTO ${t} (key, data, url, rule, run, fetched_at, first_seen, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (key) DO NOTHING`,
        ),
        update: db.prepare(
          `UPDATE ${t} SET data = ?, url = ?, rule = ?, run = ?, fetched_at = ?, updated_at = ? WHERE key = ? AND fetched_at <= ?`,
        ),
      };
      this.statements.set(type, s);
    }
    return s;
  }

  /**
   * Runs a synchronous database call, retrying with async sleeps while another process holds the file lock, and
   * classifies failures: a lock that outlasts busyTimeoutMs is StoreUnavailableError (the writer backs off), a
   * constraint or size failure is StoreDataError (the writer isolates the offending entry).
   */
  private async withBusyRetry<T>(what: string, fn: () => T): Promise<T> {
    const deadline = Date.now() + this.busyTimeoutMs;
    let delay = 5;
    for (;;) {
      try {
        return fn();
      } catch (err) {
        const msg = (err as Error).message ?? String(err);
        if (!isBusy(msg)) {
          if (err instanceof StoreUnavailableError || err instanceof StoreDataError) throw err;
          if (isDataError(msg)) throw new StoreDataError(`SQLite store ${this.path} rejected the data (${what}): ${msg}`, { cause: err });
          if (isIoError(msg)) throw new StoreUnavailableError(`SQLite store ${this.path} cannot ${what}: ${msg} — check disk space and permissions`, { cause: err });
          if (/not a database|malformed/i.test(msg)) {
            throw new Error(`SQLite store ${this.path} cannot ${what}: ${msg} — the file is not a (healthy) SQLite database; move it away or choose another path`, { cause: err });
          }
          throw err instanceof Error && msg.includes(this.path) ? err : new Error(`SQLite store ${this.path} cannot ${what}: ${msg}`, { cause: err });
        }
        if (Date.now() >= deadline) {
          throw new StoreUnavailableError(
            `SQLite store ${this.path} stayed locked for ${this.busyTimeoutMs} ms (${what}): another process holds a write transaction on it (a crawl's writer, or a tool such as the sqlite3 shell or DB Browser with unsaved changes)`,
            { cause: err },
          );
        }
        await new Promise((r) => setTimeout(r, delay));
        delay = Math.min(delay * 2, 100);
      }
    }
  }
}

function all(db: DatabaseSync, sql: string, params: readonly unknown[] = []): Row[] {
  return db.prepare(sql).all(...bind(params)) as Row[];
}

function get(db: DatabaseSync, sql: string, params: readonly unknown[] = []): Row | undefined {
  return db.prepare(sql).get(...bind(params)) as Row | undefined;
}

function run(db: DatabaseSync, sql: string, params: readonly unknown[] = []): void {
  db.prepare(sql).run(...bind(params));
}

function isBusy(msg: string): boolean {
  return /database is locked|database is busy|SQLITE_BUSY/i.test(msg);
}

function isDataError(msg: string): boolean {
  return /constraint failed|too big|datatype mismatch|malformed JSON/i.test(msg);
}

function isIoError(msg: string): boolean {
  return /disk I\/O error|database or disk is full|unable to open database|readonly database/i.test(msg);
}

function clampLimit(limit: number | undefined): number {
  return Math.min(Math.max(1, limit ?? 100), 10_000);
}

function nullable(v: unknown): string | null {
  return v === null || v === undefined ? null : String(v);
}

function toItem(type: string, r: Row): StoredItem {
  return {
    type,
    key: String(r.key),
    data: JSON.parse(String(r.data)) as Record<string, unknown>,
    url: nullable(r.url),
    rule: nullable(r.rule),
    run: nullable(r.run),
    fetchedAt: Number(r.fetched_at),
    firstSeen: Number(r.first_seen),
    updatedAt: Number(r.updated_at),
  };
}
