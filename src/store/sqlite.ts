import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type { DatabaseSync, StatementSync } from 'node:sqlite';
import { itemTableStatements, writeItems, type ItemTableStatements } from './sqliteItems';
import { itemTableName, mergeFieldNames, quoteIdent } from './tables';
import { ItemHistoryLog } from './history/log';
import type { ChangeRow, RunChangeCounts } from '../core/history/diff';
import { sqliteHistorySql } from './history/sqlite';
import { all, bind, get, loadSqlite, run, settled, withBusyRetry } from './sqliteDriver';
import { itemTableSchema, prepareDatabase } from './sqliteSchema';
import {
  clampLimit,
  ERROR_COLUMNS,
  errorFromRow,
  errorValues,
  fieldsByType,
  itemFromRow,
  nullable,
  orderColumn,
  pageConflict,
  revisitConflict,
  RUN_COLUMNS,
  RUN_CONFLICT,
  runFromRow,
  runValues,
  text,
} from './rows';
import type {
  ConflictPolicy,
  ErrorRow,
  ItemRow,
  ItemStore,
  PageRow,
  ReadOptions,
  RunHistoryClose,
  RunItems,
  RunSummary,
  StoredError,
  StoredItem,
  StoredRevisit,
  WriteResult,
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
  /** Record item history (default true); off when the task's store.history.keep is 0. */
  readonly history?: boolean;
}

const SUMMARY_SQL = `INSERT INTO runs (${RUN_COLUMNS.join(', ')}) VALUES (${RUN_COLUMNS.map(() => '?').join(', ')}) ${RUN_CONFLICT}`;

export class SqliteStore implements ItemStore {
  readonly kind = 'sqlite';
  readonly location: string;
  readonly path: string;
  /** The journal mode SQLite accepted: 'wal', or 'delete' where the file system cannot share memory. */
  journalMode = 'unknown';
  private db: DatabaseSync | null = null;
  private readonly busyTimeoutMs: number;
  private readonly recordHistory: boolean;
  private readonly types = new Map<string, { table: string; fields: string[] }>();
  private readonly statements = new Map<string, ItemTableStatements>();
  private readonly shared = new Map<string, StatementSync>();

  constructor(path: string, opts: SqliteStoreOptions = {}) {
    this.path = resolve(path);
    this.location = `sqlite:${this.path}`;
    this.busyTimeoutMs = opts.busyTimeoutMs ?? 20_000;
    this.recordHistory = opts.history ?? true;
    this.history = new ItemHistoryLog(sqliteHistorySql(() => this.conn(), this.path, this.busyTimeoutMs));
  }

  readonly history: ItemHistoryLog;

  async open(): Promise<void> {
    if (this.db) return;
    try {
      mkdirSync(dirname(this.path), { recursive: true });
    } catch (err) {
      throw new Error(
        `cannot create the folder for SQLite store ${this.path}: ${(err as Error).message} — check that it is writable`,
        { cause: err },
      );
    }
    const { DatabaseSync: SqliteDatabase } = loadSqlite(this.path);
    await this.withBusyRetry('open', () => {
      let db: DatabaseSync;
      try {
        db = new SqliteDatabase(this.path);
      } catch (err) {
        throw new Error(
          `cannot open SQLite store ${this.path}: ${(err as Error).message} — check that the file is a SQLite database and the folder is writable`,
          { cause: err },
        );
      }
      try {
        this.journalMode = prepareDatabase(db, this.path);
      } catch (err) {
        db.close();
        throw err;
      }
      this.db = db;
      this.loadTypes();
    });
  }

  close(): Promise<void> {
    const db = this.db;
    if (!db) return Promise.resolve();
    this.db = null;
    this.statements.clear();
    this.shared.clear();
    return settled(() => db.close());
  }

  async writeBatch(
    pages: readonly PageRow[],
    items: readonly ItemRow[],
    policy: ConflictPolicy,
    errors: readonly ErrorRow[] = [],
  ): Promise<WriteResult> {
    // One transaction for the rows and what they change in item history: one commit (one WAL sync) per batch, and
    // the writer acknowledges the entries only after it, so a crash in between replays them whole.
    return this.withBusyRetry('write a batch', () =>
      this.transaction(async () => {
        const { result, changes } = this.writeRows(pages, items, policy, errors);
        if (this.recordHistory) await this.history.recordChanges(changes);
        return result;
      }),
    );
  }

  /** Runs inside writeBatch's transaction. */
  private writeRows(
    pages: readonly PageRow[],
    items: readonly ItemRow[],
    policy: ConflictPolicy,
    errors: readonly ErrorRow[],
  ): { result: WriteResult; changes: readonly ChangeRow[] } {
    const now = Date.now();
    this.registerTypes(items, now);
    let pageCount = 0;
    const upsertPage = this.stmt(
      'page',
      `INSERT INTO pages (run, url, method, body, rule, depth, status, fetched_at, content_type, bytes) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
       ${pageConflict('pages')}`,
    );
    for (const p of pages) {
      upsertPage.run(
        ...bind([p.run, p.url, p.method, p.body, p.rule, p.depth, p.status, p.fetchedAt, p.contentType, p.bytes]),
      );
      pageCount++;
      if (p.revisit) this.upsertRevisit(p);
    }
    const w = writeItems(
      items,
      policy,
      now,
      (type) => this.tableStatements(type),
      this.recordHistory ? this.history : null,
    );
    const errorCount = this.insertErrors(errors);
    return {
      result: {
        written: w.inserted + w.updated,
        inserted: w.inserted,
        updated: w.updated,
        conflicts: w.conflicts,
        pages: pageCount,
        errors: errorCount,
      },
      changes: w.changes,
    };
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
       ${revisitConflict('page_validators')}`,
    ).run(
      ...bind([
        p.url,
        r.finalUrl,
        r.etag,
        r.lastModified,
        r.shape,
        r.items,
        r.links === null ? null : Buffer.from(r.links, 'base64'),
        p.run,
        p.fetchedAt,
      ]),
    );
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
          url: text(r.url),
          finalUrl: text(r.final_url),
          etag: nullable(r.etag),
          lastModified: nullable(r.last_modified),
          shape: text(r.shape),
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
    await this.withBusyRetry('record the run summary', () => run(this.conn(), SUMMARY_SQL, runValues(s)));
  }

  async endRun(s: RunSummary, close: RunHistoryClose): Promise<RunChangeCounts> {
    // One commit for both: a commit is a WAL sync, the larger part of a re-crawl's close in item history.
    return this.withBusyRetry('record the run summary and close its item history', () =>
      this.transaction(async () => {
        run(this.conn(), SUMMARY_SQL, runValues(s));
        return this.history.finishRun({ task: s.task, run: s.run, finishedAt: s.finishedAt, ...close });
      }),
    );
  }

  async readRuns(): Promise<RunSummary[]> {
    const rows = await this.withBusyRetry('read runs', () =>
      all(this.conn(), 'SELECT * FROM runs ORDER BY started_at, run'),
    );
    return rows.map(runFromRow);
  }

  async readErrors(opts: { offset?: number; limit?: number } = {}): Promise<StoredError[]> {
    const rows = await this.withBusyRetry('read errors', () =>
      all(this.conn(), 'SELECT * FROM errors ORDER BY id LIMIT ? OFFSET ?', [
        clampLimit(opts.limit),
        Math.max(0, opts.offset ?? 0),
      ]),
    );
    return rows.map(errorFromRow);
  }

  async countErrors(): Promise<number> {
    return this.withBusyRetry('count errors', () =>
      Number(get(this.conn(), 'SELECT count(*) AS n FROM errors')?.n ?? 0),
    );
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
      return all(
        this.conn(),
        `SELECT run, count(*) AS n, min(fetched_at) AS first FROM ${quoteIdent(table)} GROUP BY run ORDER BY first, run`,
      ).map((r) => ({
        run: nullable(r.run),
        items: Number(r.n),
        firstFetchedAt: Number(r.first),
      }));
    });
  }

  async readItems(type: string, opts: ReadOptions = {}): Promise<StoredItem[]> {
    const column = orderColumn(opts);
    return this.withBusyRetry('read items', () => {
      const table = this.tableOf(type);
      if (!table) return [];
      const dir = opts.descending ? 'DESC' : 'ASC';
      const rows = all(
        this.conn(),
        `SELECT * FROM ${quoteIdent(table)} ORDER BY ${column} ${dir}, id ${dir} LIMIT ? OFFSET ?`,
        [clampLimit(opts.limit), Math.max(0, opts.offset ?? 0)],
      );
      return rows.map((r) => itemFromRow(type, r));
    });
  }

  async *iterateItems(type: string, opts: { pageSize?: number } = {}): AsyncIterable<StoredItem> {
    const size = Math.max(1, opts.pageSize ?? 1000);
    let after = 0;
    for (;;) {
      // Keyset paging: each page is one short statement, so no lock is held while the consumer awaits.
      const rows = await this.withBusyRetry('read items', () => {
        const table = this.tableOf(type);
        return table
          ? all(this.conn(), `SELECT * FROM ${quoteIdent(table)} WHERE id > ? ORDER BY id LIMIT ?`, [after, size])
          : [];
      });
      for (const r of rows) yield itemFromRow(type, r);
      if (rows.length < size) return;
      after = Number(rows[rows.length - 1]!.id);
    }
  }

  private conn(): DatabaseSync {
    if (!this.db) throw new Error(`SQLite store ${this.path} is not open (call open() first, or it was closed)`);
    return this.db;
  }

  /**
   * BEGIN IMMEDIATE … COMMIT around fn. An async fn (writeBatch's, for item history) awaits only node:sqlite calls,
   * which are synchronous: its promises settle within this turn of the event loop.
   */
  private transaction<T>(fn: () => T): T;
  private transaction<T>(fn: () => Promise<T>): Promise<T>;
  private transaction<T>(fn: () => T | Promise<T>): T | Promise<T> {
    const db = this.conn();
    db.exec('BEGIN IMMEDIATE');
    const fail = (err: unknown): never => {
      if (db.isTransaction) db.exec('ROLLBACK');
      // Types registered inside a rolled-back transaction do not exist: forget every cached type and statement
      // (re-reading the registry here could itself hit a busy lock and mask the original error).
      this.forgetTypes();
      throw err;
    };
    const commit = (v: T): T => {
      db.exec('COMMIT');
      return v;
    };
    try {
      const out = fn();
      return out instanceof Promise ? out.then(commit).catch(fail) : commit(out);
    } catch (err) {
      return fail(err);
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
      `INSERT INTO errors (${ERROR_COLUMNS.join(', ')}) VALUES (${ERROR_COLUMNS.map(() => '?').join(', ')}) ON CONFLICT (error_id) DO NOTHING`,
    );
    let n = 0;
    for (const e of errors) n += Number(s.run(...bind(errorValues(e))).changes);
    return n;
  }

  /** Reads the type registry; other processes may have added types since we last looked. */
  private loadTypes(): void {
    if (!this.db) return;
    const rows = all(this.db, 'SELECT type, table_name, fields FROM item_types');
    const live = new Set<string>();
    for (const r of rows) {
      const type = text(r.type);
      live.add(type);
      this.types.set(type, { table: text(r.table_name), fields: JSON.parse(text(r.fields)) as string[] });
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
    const byType = fieldsByType(items);
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
        run(db, 'INSERT INTO item_types (type, table_name, fields, created_at) VALUES (?, ?, ?, ?)', [
          type,
          table,
          JSON.stringify([...fields]),
          now,
        ]);
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

  private tableStatements(type: string): ItemTableStatements {
    let s = this.statements.get(type);
    if (!s) {
      const table = this.tableOf(type);
      if (!table) throw new Error(`internal: item type '${type}' has no table`);
      s = itemTableStatements(this.conn(), table, this.recordHistory);
      this.statements.set(type, s);
    }
    return s;
  }

  /** A database call retried while another process holds the lock, its failures classified (sqliteDriver.ts). */
  private withBusyRetry<T>(what: string, fn: () => T): Promise<T> {
    return withBusyRetry(this.path, this.busyTimeoutMs, what, fn);
  }
}
