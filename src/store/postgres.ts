import type pg from 'pg';
import type { RunChangeCounts } from '../core/history/diff';
import { redactUrl } from '../core/url/redact';
import { mergeFieldNames, quoteIdent } from './tables';
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
import { ItemHistoryLog, toState, type HistoryRowWriter, type Sighted, type Statement } from './history/log';
import { postgresClientSql, postgresHistoryRows, postgresHistorySql, postgresSeenWrite } from './history/postgres';
import {
  clampLimit,
  errorFromRow,
  fieldsByType,
  itemFromRow,
  orderColumn,
  RUN_COLUMNS,
  RUN_CONFLICT,
  runFromRow,
  runValues,
} from './rows';
import { CHUNK, insertErrors, insertItems, upsertPages, upsertRevisits } from './postgresBulk';
import { classify, isConnectionError } from './postgresErrors';
import { createItemTable, createSchema } from './postgresSchema';

// The shared store: PostgreSQL through a `pg` Pool, for teams and for crawls too big for a file. Several writers
// (one per worker machine) may write the same task at once, so everything here is safe under concurrency: rows go
// in bulk, sorted so batches cannot deadlock (postgresBulk.ts), DDL under an advisory lock (postgresSchema.ts), and
// a deadlock that still happens is retried like a lost connection (postgresErrors.ts). Tables live in one schema
// per task (see open.ts) so several tasks can share a database.

export interface PostgresStoreOptions {
  /** Schema holding this store's tables (created if missing). */
  readonly schema: string;
  /** Largest pool; the writer uses one connection at a time, readers (UI paging, exports) the others. */
  readonly maxConnections?: number;
  readonly connectTimeoutMs?: number;
  /** Upper bound for any statement: a hung server surfaces as a retryable error instead of a stuck writer. */
  readonly statementTimeoutMs?: number;
  /** Record item history (default true); off when the task's store.history.keep is 0. */
  readonly history?: boolean;
}

export class PostgresStore implements ItemStore {
  readonly kind = 'postgres';
  readonly location: string;
  readonly schema: string;
  /** Made on first use (connectPool). */
  private pool: Promise<pg.Pool> | null = null;
  private readonly poolConfig: pg.PoolConfig;
  private readonly s: string;
  private schemaReady = false;
  private readonly types = new Map<string, { table: string; fields: string[] }>();
  private closed = false;
  private readonly recordHistory: boolean;

  constructor(url: string, opts: PostgresStoreOptions) {
    this.location = redactUrl(url);
    this.schema = opts.schema;
    this.s = quoteIdent(opts.schema);
    this.recordHistory = opts.history ?? true;
    this.poolConfig = {
      connectionString: url,
      max: opts.maxConnections ?? 4,
      connectionTimeoutMillis: opts.connectTimeoutMs ?? 5_000,
      idleTimeoutMillis: 10_000,
      statement_timeout: opts.statementTimeoutMs ?? 60_000,
      query_timeout: (opts.statementTimeoutMs ?? 60_000) + 5_000,
      application_name: 'crawl-studio',
      keepAlive: true,
    };
    this.history = new ItemHistoryLog(postgresHistorySql(this.s, (what, fn) => this.tx(what, fn)));
    this.historyRows = postgresHistoryRows(this.s);
  }

  readonly history: ItemHistoryLog;
  private readonly historyRows: HistoryRowWriter;

  async open(): Promise<void> {
    await this.ensureSchema();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await (await this.pool)?.end();
  }

  /**
   * The pool, made on first use: a process that never opens a PostgreSQL store does not load the driver (pg is
   * bundled, so this import() is a deferred require inside the bundle, not a module load at run time).
   */
  private connectPool(): Promise<pg.Pool> {
    this.pool ??= import('pg').then(({ Pool }) => {
      const pool = new Pool(this.poolConfig);
      // Idle clients see the server go away (restart, failover) as an 'error' event; without a listener Node
      // would crash the process. The next query gets a fresh connection or a classified error.
      pool.on('error', () => undefined);
      return pool;
    });
    return this.pool;
  }

  async writeBatch(
    pages: readonly PageRow[],
    items: readonly ItemRow[],
    policy: ConflictPolicy,
    errors: readonly ErrorRow[] = [],
  ): Promise<WriteResult> {
    await this.ensureSchema();
    await this.ensureTables(items);
    return this.tx('write a batch', async (c) => {
      await this.extendFields(c, items);
      // Items first: their statements also read what item history needs (no round trip of its own), and history's
      // writes then ride on the pages' statement. In the batch's transaction: the items and what they changed
      // commit together.
      const r = await this.upsertItems(c, items, policy);
      const history = this.recordHistory ? this.historyWrites(r.sighted, policy) : [];
      const pageCount = await upsertPages(c, this.s, pages, history);
      await upsertRevisits(c, this.s, pages);
      const errorCount = await insertErrors(c, this.s, errors);
      return {
        written: r.written,
        inserted: r.inserted,
        updated: r.written - r.inserted,
        conflicts: items.length - r.inserted,
        pages: pageCount,
        errors: errorCount,
      };
    });
  }

  /**
   * A batch's items by type (types and keys in order: concurrent writers lock rows alike). With history, also the
   * items it must decide on, with their states before the batch: not those whose row already held their data as
   * history's (a re-crawl's most), which cost history nothing but their row's update.
   */
  private async upsertItems(
    c: pg.PoolClient,
    items: readonly ItemRow[],
    policy: ConflictPolicy,
  ): Promise<{ inserted: number; written: number; sighted: Sighted[] }> {
    const byType = new Map<string, ItemRow[]>();
    for (const item of items) {
      let list = byType.get(item.type);
      if (!list) byType.set(item.type, (list = []));
      list.push(item);
    }
    let inserted = 0;
    let written = 0;
    const sighted: Sighted[] = [];
    for (const type of [...byType.keys()].sort()) {
      const rows = byType.get(type)!.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
      for (let i = 0; i < rows.length; i += CHUNK) {
        const part = rows.slice(i, i + CHUNK);
        const r = await insertItems(c, this.knownTable(type), part, policy, this.recordHistory);
        inserted += r.inserted;
        written += r.written;
        if (r.observe.length === 0) continue;
        const byKey = new Map(part.map((item) => [item.key, item]));
        for (const o of r.observe)
          sighted.push({ sighting: byKey.get(o.key)!, prev: o.state ? toState(type, o.state) : null });
      }
    }
    return { inserted, written, sighted };
  }

  /**
   * What a batch's items record in history, as statements for its transaction: the change rows, and with policy
   * ignore (rows keep their first data) history's own values in the rows. With policy update the item statement
   * already wrote the state into the rows.
   */
  private historyWrites(sighted: readonly Sighted[], policy: ConflictPolicy): Statement[] {
    const decided = this.history.decide(sighted);
    const out = this.history.changeWrites(decided.changes, { rows: this.historyRows });
    if (policy === 'ignore') {
      const byType = new Map<string, typeof decided.states>();
      for (const st of decided.states) byType.set(st.type, [...(byType.get(st.type) ?? []), st]);
      for (const type of [...byType.keys()].sort())
        out.push(postgresSeenWrite(this.knownTable(type), byType.get(type)!));
    }
    return out;
  }

  /** An item type's table, schema-qualified and quoted, for a batch's type (ensureTables made it). */
  private knownTable(type: string): string {
    return `${this.s}.${quoteIdent(this.types.get(type)!.table)}`;
  }

  async writeErrors(errors: readonly ErrorRow[]): Promise<number> {
    if (errors.length === 0) return 0;
    await this.ensureSchema();
    return this.tx('record errors', (c) => insertErrors(c, this.s, errors));
  }

  async writeRunSummary(s: RunSummary): Promise<void> {
    await this.ensureSchema();
    await this.query('record the run summary', this.summarySql(), runValues(s));
  }

  async endRun(s: RunSummary, close: RunHistoryClose): Promise<RunChangeCounts> {
    await this.ensureSchema();
    // One transaction for both: its BEGIN and COMMIT are round trips history's close would otherwise make again.
    return this.tx('record the run summary and close its item history', async (c) => {
      await c.query(this.summarySql(), runValues(s));
      return this.history.finishRun(
        { task: s.task, run: s.run, finishedAt: s.finishedAt, ...close },
        postgresClientSql(this.s, c),
      );
    });
  }

  private summarySql(): string {
    return `INSERT INTO ${this.s}.runs (${RUN_COLUMNS.join(', ')})
       VALUES ($1, $2, to_timestamp($3 / 1000.0), to_timestamp($4 / 1000.0), $5, $6, $7, $8, $9, $10, $11) ${RUN_CONFLICT}`;
  }

  async readRuns(): Promise<RunSummary[]> {
    await this.ensureSchema();
    const { rows } = await this.query(
      'read runs',
      `SELECT run, task, ${ms('started_at')} AS started_at, ${ms('finished_at')} AS finished_at, duration_ms::float8 AS duration_ms,
         pages::float8 AS pages, items::float8 AS items, duplicates::float8 AS duplicates, conflicts::float8 AS conflicts,
         failures::float8 AS failures, extra
       FROM ${this.s}.runs ORDER BY started_at, run`,
    );
    return rows.map(runFromRow);
  }

  async readErrors(opts: { offset?: number; limit?: number } = {}): Promise<StoredError[]> {
    await this.ensureSchema();
    const { rows } = await this.query(
      'read errors',
      `SELECT error_id, kind, run, url, rule, type, key, message, ${ms('at')} AS at FROM ${this.s}.errors ORDER BY id LIMIT $1 OFFSET $2`,
      [clampLimit(opts.limit), Math.max(0, opts.offset ?? 0)],
    );
    return rows.map(errorFromRow);
  }

  async countErrors(): Promise<number> {
    await this.ensureSchema();
    return this.countOf('count errors', `${this.s}.errors`);
  }

  async countPages(): Promise<number> {
    await this.ensureSchema();
    return this.countOf('count pages', `${this.s}.pages`);
  }

  async itemTypes(): Promise<string[]> {
    await this.loadTypes();
    return [...this.types.keys()].sort();
  }

  async fieldNames(type: string): Promise<string[]> {
    await this.loadTypes();
    return [...(this.types.get(type)?.fields ?? [])];
  }

  async count(type: string): Promise<number> {
    const table = await this.tableOf(type);
    if (!table) return 0;
    return this.countOf('count items', table);
  }

  private async countOf(what: string, table: string): Promise<number> {
    const { rows } = await this.query<{ n: number }>(what, `SELECT count(*)::float8 AS n FROM ${table}`);
    return rows[0]?.n ?? 0;
  }

  async itemRuns(type: string): Promise<RunItems[]> {
    const table = await this.tableOf(type);
    if (!table) return [];
    const { rows } = await this.query<{ run: string | null; n: number; first: number }>(
      'count items by run',
      `SELECT run, count(*)::float8 AS n, ${ms('min(fetched_at)')} AS first FROM ${table} GROUP BY run ORDER BY min(fetched_at), run`,
    );
    return rows.map((r) => ({ run: r.run, items: r.n, firstFetchedAt: Math.round(r.first) }));
  }

  async readItems(type: string, opts: ReadOptions = {}): Promise<StoredItem[]> {
    const column = orderColumn(opts);
    const table = await this.tableOf(type);
    if (!table) return [];
    const dir = opts.descending ? 'DESC' : 'ASC';
    const { rows } = await this.query(
      'read items',
      `SELECT ${ITEM_COLUMNS} FROM ${table} ORDER BY ${column} ${dir}, id ${dir} LIMIT $1 OFFSET $2`,
      [clampLimit(opts.limit), Math.max(0, opts.offset ?? 0)],
    );
    return rows.map((r) => itemFromRow(type, r));
  }

  async *iterateItems(type: string, opts: { pageSize?: number } = {}): AsyncIterable<StoredItem> {
    const size = Math.max(1, opts.pageSize ?? 1000);
    const table = await this.tableOf(type);
    if (!table) return;
    let after = '0';
    for (;;) {
      // Keyset paging rather than a cursor: no transaction stays open while the consumer (a slow file, a
      // network upload) takes its time.
      const { rows } = await this.query(
        'read items',
        `SELECT ${ITEM_COLUMNS} FROM ${table} WHERE id > $1 ORDER BY id LIMIT $2`,
        [after, size],
      );
      for (const r of rows) yield itemFromRow(type, r);
      if (rows.length < size) return;
      after = String(rows.at(-1)!.id);
    }
  }

  private async ensureSchema(): Promise<void> {
    if (this.schemaReady) return;
    await this.tx('create the schema', (c) => createSchema(c, this.s, this.schema));
    this.schemaReady = true;
  }

  private async loadTypes(): Promise<void> {
    await this.ensureSchema();
    const { rows } = await this.query<{ type: string; table_name: string; fields: string[] }>(
      'list item types',
      `SELECT type, table_name, fields FROM ${this.s}.item_types`,
    );
    this.types.clear();
    for (const r of rows) this.types.set(r.type, { table: r.table_name, fields: r.fields });
  }

  private async tableOf(type: string): Promise<string | null> {
    if (!this.types.has(type)) await this.loadTypes();
    const t = this.types.get(type);
    return t ? `${this.s}.${quoteIdent(t.table)}` : null;
  }

  /** Creates the tables of item types this store has not seen yet, in its own short transaction. */
  private async ensureTables(items: readonly ItemRow[]): Promise<void> {
    const missing = new Set<string>();
    for (const item of items) if (!this.types.has(item.type)) missing.add(item.type);
    if (missing.size === 0) return;
    await this.loadTypes();
    for (const t of [...missing]) if (this.types.has(t)) missing.delete(t);
    if (missing.size === 0) return;
    await this.tx('create item tables', async (c) => {
      await c.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`crawl-studio:${this.schema}`]);
      for (const type of [...missing].sort()) await createItemTable(c, this.s, type);
    });
    await this.loadTypes();
  }

  /** Appends field names seen for the first time, under a row lock so concurrent writers do not lose any. */
  private async extendFields(c: pg.PoolClient, items: readonly ItemRow[]): Promise<void> {
    const byType = fieldsByType(items);
    for (const type of [...byType.keys()].sort()) {
      const fields = byType.get(type)!;
      const cached = this.types.get(type);
      if (cached && !mergeFieldNames(cached.fields, fields)) continue;
      const { rows } = await c.query<{ fields: string[] }>(
        `SELECT fields FROM ${this.s}.item_types WHERE type = $1 FOR UPDATE`,
        [type],
      );
      const current = rows[0]?.fields ?? [];
      const merged = mergeFieldNames(current, fields);
      if (merged)
        await c.query(`UPDATE ${this.s}.item_types SET fields = $2::jsonb WHERE type = $1`, [
          type,
          JSON.stringify(merged),
        ]);
      if (cached) cached.fields = merged ?? current;
    }
  }

  async *iterateRevisits(opts: { pageSize?: number } = {}): AsyncIterable<StoredRevisit> {
    await this.ensureSchema();
    const size = Math.max(1, opts.pageSize ?? 1000);
    let after = '';
    for (;;) {
      const { rows } = await this.query<RevisitRow>(
        'read page validators',
        `SELECT url, final_url, etag, last_modified, shape, items, encode(links, 'base64') AS links, ${ms('fetched_at')} AS fetched_at
         FROM ${this.s}.page_validators WHERE url > $1 AND links IS NOT NULL AND (etag IS NOT NULL OR last_modified IS NOT NULL) ORDER BY url LIMIT $2`,
        [after, size],
      );
      for (const r of rows) {
        // encode(…, 'base64') wraps its output every 76 characters.
        yield {
          url: r.url,
          finalUrl: r.final_url,
          etag: r.etag,
          lastModified: r.last_modified,
          shape: r.shape,
          items: r.items,
          links: r.links.replace(/\n/g, ''),
          fetchedAt: Math.round(r.fetched_at),
        };
      }
      if (rows.length < size) return;
      after = rows.at(-1)!.url;
    }
  }

  /** Rows are shaped by the SQL at each call site (columns cast to JS-friendly types there): R says how. */
  private async query<R extends pg.QueryResultRow = Record<string, unknown>>(
    what: string,
    sql: string,
    params?: unknown[],
  ): Promise<pg.QueryResult<R>> {
    this.assertOpen();
    try {
      return await (await this.connectPool()).query<R>(sql, params);
    } catch (err) {
      throw this.classify(err, what);
    }
  }

  private async tx<T>(what: string, fn: (c: pg.PoolClient) => Promise<T>): Promise<T> {
    this.assertOpen();
    let client: pg.PoolClient;
    try {
      client = await (await this.connectPool()).connect();
    } catch (err) {
      throw this.classify(err, what);
    }
    let broken: Error | undefined;
    // The pool listens for errors of idle clients only. A connection that dies while this client is checked out
    // but between two queries emits 'error' on the client; without a listener that crashes the process (seen
    // in the PostgreSQL-outage test). The next query then fails, and the transaction with it.
    const onError = (err: Error) => (broken = err);
    client.on('error', onError);
    try {
      await client.query('BEGIN');
      const out = await fn(client);
      await client.query('COMMIT');
      return out;
    } catch (err) {
      if (isConnectionError(err)) broken = err as Error;
      else await client.query('ROLLBACK').catch((e: Error) => (broken = e));
      throw this.classify(err, what);
    } finally {
      client.off('error', onError);
      // A client whose connection failed must not go back to the pool.
      client.release(broken);
    }
  }

  private assertOpen(): void {
    if (this.closed) throw new Error(`PostgreSQL store ${this.location} is closed`);
  }

  private classify(err: unknown, what: string): Error {
    return classify(err, what, this.location, this.schema);
  }
}

/** A page_validators row as iterateRevisits reads it (links as base64 text, never null there). */
interface RevisitRow {
  readonly url: string;
  readonly final_url: string;
  readonly etag: string | null;
  readonly last_modified: string | null;
  readonly shape: string;
  readonly items: number;
  readonly links: string;
  readonly fetched_at: number;
}

const ITEM_COLUMNS = `id, key, data, url, rule, run, ${ms('fetched_at')} AS fetched_at, ${ms('first_seen')} AS first_seen, ${ms('updated_at')} AS updated_at`;

function ms(column: string): string {
  return `(extract(epoch from ${column}) * 1000)::float8`;
}
