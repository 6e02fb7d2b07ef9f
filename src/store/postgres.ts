import type pg from 'pg';
import { redactUrl } from '../redis/connect';
import { itemTableName, mergeFieldNames, ORDER_COLUMNS, quoteIdent } from './tables';
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
import { latestRevisits } from './revisits';
import { historySchema, ItemHistoryLog } from './history/log';
import { postgresClientSql, postgresHistorySql } from './history/postgres';

// The shared store: PostgreSQL through a `pg` Pool, for teams and for crawls too big for a file. Several writers
// (one per worker machine) may write the same task at once, so everything here is safe under concurrency:
// - rows are inserted with multi-row INSERT ... SELECT FROM ROWS FROM(jsonb_array_elements(...), unnest(...))
//   ... ON CONFLICT, one statement per table per batch. Text columns travel as JSON arrays rather than
//   PostgreSQL arrays: JSON.stringify is native and the server parses JSON faster than array literals, which
//   measured 1.7x faster than unnest(text[]) — tens of thousands of items per second;
// - each statement's rows are sorted (tables, then keys), so two batches lock index entries in the same order
//   and cannot deadlock each other (a deadlock that still happens is retried like a lost connection);
// - DDL (schema, tables for new item types) runs under a transaction-level advisory lock, because concurrent
//   CREATE TABLE IF NOT EXISTS can still fail on the catalog's unique index.
// Tables live in one schema per task (see open.ts) so several tasks can share a database.

export interface PostgresStoreOptions {
  /** Schema holding this store's tables (created if missing). */
  readonly schema: string;
  /** Largest pool; the writer uses one connection at a time, readers (UI paging, exports) the others. */
  readonly maxConnections?: number;
  readonly connectTimeoutMs?: number;
  /** Upper bound for any statement: a hung server surfaces as a retryable error instead of a stuck writer. */
  readonly statementTimeoutMs?: number;
}

/** Rows per INSERT statement: bounds the size of one array parameter; a batch may span several statements. */
const CHUNK = 10_000;

export class PostgresStore implements ItemStore {
  readonly kind = 'postgres';
  readonly location: string;
  readonly schema: string;
  private readonly pool: pg.Pool;
  private readonly s: string;
  private schemaReady = false;
  private readonly types = new Map<string, { table: string; fields: string[] }>();
  private closed = false;

  constructor(url: string, opts: PostgresStoreOptions) {
    this.location = redactUrl(url);
    this.schema = opts.schema;
    this.s = quoteIdent(opts.schema);
    // Required here, not imported: a process that never opens a PostgreSQL store does not load the driver.
    const { Pool } = require('pg') as typeof import('pg');
    this.pool = new Pool({
      connectionString: url,
      max: opts.maxConnections ?? 4,
      connectionTimeoutMillis: opts.connectTimeoutMs ?? 5_000,
      idleTimeoutMillis: 10_000,
      statement_timeout: opts.statementTimeoutMs ?? 60_000,
      query_timeout: (opts.statementTimeoutMs ?? 60_000) + 5_000,
      application_name: 'crawl-studio',
      keepAlive: true,
    });
    // Idle clients see the server go away (restart, failover) as an 'error' event; without a listener Node
    // would crash the process. The next query gets a fresh connection or a classified error.
    this.pool.on('error', () => undefined);
    this.history = new ItemHistoryLog(postgresHistorySql(this.s, (what, fn) => this.tx(what, fn)));
  }

  readonly history: ItemHistoryLog;

  async open(): Promise<void> {
    await this.ensureSchema();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.pool.end();
  }

  async writeBatch(pages: readonly PageRow[], items: readonly ItemRow[], policy: ConflictPolicy, errors: readonly ErrorRow[] = []): Promise<WriteResult> {
    await this.ensureSchema();
    await this.ensureTables(items);
    return this.tx('write a batch', async (c) => {
      await this.extendFields(c, items);
      const pageCount = await this.upsertPages(c, pages);
      await this.upsertRevisits(c, pages);
      const byType = new Map<string, ItemRow[]>();
      for (const item of items) {
        let list = byType.get(item.type);
        if (!list) byType.set(item.type, (list = []));
        list.push(item);
      }
      let inserted = 0;
      let written = 0;
      for (const type of [...byType.keys()].sort()) {
        const rows = byType.get(type)!.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
        const table = `${this.s}.${quoteIdent(this.types.get(type)!.table)}`;
        for (let i = 0; i < rows.length; i += CHUNK) {
          const r = await this.insertItems(c, table, rows.slice(i, i + CHUNK), policy);
          inserted += r.inserted;
          written += r.written;
        }
      }
      const errorCount = await this.insertErrors(c, errors);
      // In the batch's transaction: the items and what they changed commit together.
      await this.history.observe(items, postgresClientSql(this.s, c));
      return { written, inserted, updated: written - inserted, conflicts: items.length - inserted, pages: pageCount, errors: errorCount };
    });
  }

  async writeErrors(errors: readonly ErrorRow[]): Promise<number> {
    if (errors.length === 0) return 0;
    await this.ensureSchema();
    return this.tx('record errors', (c) => this.insertErrors(c, errors));
  }

  async writeRunSummary(s: RunSummary): Promise<void> {
    await this.ensureSchema();
    await this.query(
      'record the run summary',
      `INSERT INTO ${this.s}.runs (run, task, started_at, finished_at, duration_ms, pages, items, duplicates, conflicts, failures, extra)
       VALUES ($1, $2, to_timestamp($3 / 1000.0), to_timestamp($4 / 1000.0), $5, $6, $7, $8, $9, $10, $11)
       ON CONFLICT (run) DO UPDATE SET task = EXCLUDED.task, started_at = EXCLUDED.started_at, finished_at = EXCLUDED.finished_at,
         duration_ms = EXCLUDED.duration_ms, pages = EXCLUDED.pages, items = EXCLUDED.items, duplicates = EXCLUDED.duplicates,
         conflicts = EXCLUDED.conflicts, failures = EXCLUDED.failures, extra = EXCLUDED.extra`,
      [s.run, s.task, s.startedAt, s.finishedAt, s.durationMs, s.pages, s.items, s.duplicates, s.conflicts, s.failures, s.extra ? JSON.stringify(s.extra) : null],
    );
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
    return rows.map((r) => ({
      run: r.run,
      task: r.task,
      startedAt: Math.round(r.started_at),
      finishedAt: Math.round(r.finished_at),
      durationMs: r.duration_ms,
      pages: r.pages,
      items: r.items,
      duplicates: r.duplicates,
      conflicts: r.conflicts,
      failures: r.failures,
      ...(r.extra ? { extra: r.extra as Record<string, unknown> } : {}),
    }));
  }

  async readErrors(opts: { offset?: number; limit?: number } = {}): Promise<StoredError[]> {
    await this.ensureSchema();
    const { rows } = await this.query(
      'read errors',
      `SELECT error_id, kind, run, url, rule, type, key, message, ${ms('at')} AS at FROM ${this.s}.errors ORDER BY id LIMIT $1 OFFSET $2`,
      [clampLimit(opts.limit), Math.max(0, opts.offset ?? 0)],
    );
    return rows.map((r) => ({ id: r.error_id, kind: r.kind, run: r.run, url: r.url, rule: r.rule, type: r.type, key: r.key, message: r.message, at: Math.round(r.at) }));
  }

  async countErrors(): Promise<number> {
    await this.ensureSchema();
    const { rows } = await this.query('count errors', `SELECT count(*)::float8 AS n FROM ${this.s}.errors`);
    return rows[0].n;
  }

  async countPages(): Promise<number> {
    await this.ensureSchema();
    const { rows } = await this.query('count pages', `SELECT count(*)::float8 AS n FROM ${this.s}.pages`);
    return rows[0].n;
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
    const { rows } = await this.query('count items', `SELECT count(*)::float8 AS n FROM ${table}`);
    return rows[0].n;
  }

  async itemRuns(type: string): Promise<RunItems[]> {
    const table = await this.tableOf(type);
    if (!table) return [];
    const { rows } = await this.query('count items by run', `SELECT run, count(*)::float8 AS n, ${ms('min(fetched_at)')} AS first FROM ${table} GROUP BY run ORDER BY min(fetched_at), run`);
    return rows.map((r) => ({ run: r.run, items: r.n, firstFetchedAt: Math.round(r.first) }));
  }

  async readItems(type: string, opts: ReadOptions = {}): Promise<StoredItem[]> {
    const column = ORDER_COLUMNS[opts.orderBy ?? 'id'];
    if (!column) throw new Error(`cannot order items by '${String(opts.orderBy)}': use one of ${Object.keys(ORDER_COLUMNS).join(', ')}`);
    const table = await this.tableOf(type);
    if (!table) return [];
    const dir = opts.descending ? 'DESC' : 'ASC';
    const { rows } = await this.query(
      'read items',
      `SELECT ${ITEM_COLUMNS} FROM ${table} ORDER BY ${column} ${dir}, id ${dir} LIMIT $1 OFFSET $2`,
      [clampLimit(opts.limit), Math.max(0, opts.offset ?? 0)],
    );
    return rows.map((r) => toItem(type, r));
  }

  async *iterateItems(type: string, opts: { pageSize?: number } = {}): AsyncIterable<StoredItem> {
    const size = Math.max(1, opts.pageSize ?? 1000);
    const table = await this.tableOf(type);
    if (!table) return;
    let after = '0';
    for (;;) {
      // Keyset paging rather than a cursor: no transaction stays open while the consumer (a slow file, a
      // network upload) takes its time.
      const { rows } = await this.query('read items', `SELECT ${ITEM_COLUMNS} FROM ${table} WHERE id > $1 ORDER BY id LIMIT $2`, [after, size]);
      for (const r of rows) yield toItem(type, r);
      if (rows.length < size) return;
      after = String(rows[rows.length - 1].id);
    }
  }

  private async ensureSchema(): Promise<void> {
    if (this.schemaReady) return;
    const s = this.s;
    await this.tx('create the schema', async (c) => {
      await c.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`crawl-studio:${this.schema}`]);
      await c.query(`CREATE SCHEMA IF NOT EXISTS ${s}`);
      await c.query(`
        CREATE TABLE IF NOT EXISTS ${s}.item_types (
          type text PRIMARY KEY,
          table_name text NOT NULL UNIQUE,
          fields jsonb NOT NULL DEFAULT '[]',
          created_at timestamptz NOT NULL DEFAULT now()
        );
        CREATE TABLE IF NOT EXISTS ${s}.pages (
          id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
          run text NOT NULL,
          url text NOT NULL,
          rule text,
          depth integer,
          status integer,
          fetched_at timestamptz NOT NULL,
          content_type text,
          bytes bigint NOT NULL DEFAULT 0,
          method text NOT NULL DEFAULT 'GET',
          body text NOT NULL DEFAULT ''
        );
        CREATE TABLE IF NOT EXISTS ${s}.errors (
          id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
          error_id text NOT NULL UNIQUE,
          kind text NOT NULL,
          run text,
          url text,
          rule text,
          type text,
          key text,
          message text NOT NULL,
          at timestamptz NOT NULL
        );
        CREATE TABLE IF NOT EXISTS ${s}.runs (
          run text PRIMARY KEY,
          task text NOT NULL,
          started_at timestamptz NOT NULL,
          finished_at timestamptz NOT NULL,
          duration_ms bigint NOT NULL,
          pages bigint NOT NULL,
          items bigint NOT NULL,
          duplicates bigint NOT NULL,
          conflicts bigint NOT NULL,
          failures bigint NOT NULL,
          extra jsonb
        );
        CREATE TABLE IF NOT EXISTS ${s}.page_validators (
          url text PRIMARY KEY,
          final_url text NOT NULL,
          etag text,
          last_modified text,
          shape text NOT NULL,
          items integer NOT NULL DEFAULT 0,
          links bytea,
          run text NOT NULL,
          fetched_at timestamptz NOT NULL
        );`);
      // Pages are requests: one row per run, URL, method and body (stores made before had UNIQUE (run, url)). Only
      // when the index is missing: ALTER TABLE and CREATE INDEX lock the table even when there is nothing to do, and
      // a store whose pages another session holds locked must still open (and close) as it did before.
      const { rows } = await c.query(`SELECT to_regclass($1) IS NOT NULL AS migrated`, [`${s}.pages_run_request`]);
      if (!rows[0].migrated) {
        await c.query(`
          ALTER TABLE ${s}.pages ADD COLUMN IF NOT EXISTS method text NOT NULL DEFAULT 'GET';
          ALTER TABLE ${s}.pages ADD COLUMN IF NOT EXISTS body text NOT NULL DEFAULT '';
          CREATE UNIQUE INDEX IF NOT EXISTS pages_run_request ON ${s}.pages (run, url, method, body);
          ALTER TABLE ${s}.pages DROP CONSTRAINT IF EXISTS pages_run_url_key;`);
      }
      await c.query(historySchema(`${s}.`));
    });
    this.schemaReady = true;
  }

  private async loadTypes(): Promise<void> {
    await this.ensureSchema();
    const { rows } = await this.query('list item types', `SELECT type, table_name, fields FROM ${this.s}.item_types`);
    this.types.clear();
    for (const r of rows) this.types.set(r.type, { table: r.table_name, fields: r.fields as string[] });
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
      for (const type of [...missing].sort()) {
        const table = itemTableName(type);
        const t = `${this.s}.${quoteIdent(table)}`;
        await c.query(`
          CREATE TABLE IF NOT EXISTS ${t} (
            id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            key text NOT NULL UNIQUE,
            data jsonb NOT NULL,
            url text,
            rule text,
            run text,
            fetched_at timestamptz NOT NULL,
            first_seen timestamptz NOT NULL DEFAULT now(),
            updated_at timestamptz NOT NULL DEFAULT now()
          )`);
        await c.query(`INSERT INTO ${this.s}.item_types (type, table_name) VALUES ($1, $2) ON CONFLICT (type) DO NOTHING`, [type, table]);
      }
    });
    await this.loadTypes();
  }

  /** Appends field names seen for the first time, under a row lock so concurrent writers do not lose any. */
  private async extendFields(c: pg.PoolClient, items: readonly ItemRow[]): Promise<void> {
    const byType = new Map<string, Set<string>>();
    for (const item of items) {
      let set = byType.get(item.type);
      if (!set) byType.set(item.type, (set = new Set()));
      for (const f of item.fields) set.add(f);
    }
    for (const type of [...byType.keys()].sort()) {
      const fields = byType.get(type)!;
      const cached = this.types.get(type);
      if (cached && !mergeFieldNames(cached.fields, fields)) continue;
      const { rows } = await c.query(`SELECT fields FROM ${this.s}.item_types WHERE type = $1 FOR UPDATE`, [type]);
      const current = (rows[0]?.fields ?? []) as string[];
      const merged = mergeFieldNames(current, fields);
      if (merged) await c.query(`UPDATE ${this.s}.item_types SET fields = $2::jsonb WHERE type = $1`, [type, JSON.stringify(merged)]);
      if (cached) cached.fields = merged ?? current;
    }
  }

  private async upsertPages(c: pg.PoolClient, pages: readonly PageRow[]): Promise<number> {
    if (pages.length === 0) return 0;
    // One order for every writer (rows lock in it): by run, URL, method, body.
    const key = (p: PageRow) => [p.run, p.url, p.method, p.body];
    const rows = [...pages].sort((a, b) => {
      const ka = key(a);
      const kb = key(b);
      for (let i = 0; i < ka.length; i++) if (ka[i] !== kb[i]) return ka[i]! < kb[i]! ? -1 : 1;
      return 0;
    });
    for (let i = 0; i < rows.length; i += CHUNK) {
      const part = rows.slice(i, i + CHUNK);
      await c.query(
        `INSERT INTO ${this.s}.pages AS p (run, url, rule, depth, status, fetched_at, content_type, bytes, method, body)
         SELECT run, url, rule, depth, status, to_timestamp(f / 1000.0), ct, bytes, method, body
         FROM ROWS FROM (jsonb_array_elements_text($1::jsonb), jsonb_array_elements_text($2::jsonb), jsonb_array_elements_text($3::jsonb),
           unnest($4::int[]), unnest($5::int[]), unnest($6::float8[]), jsonb_array_elements_text($7::jsonb), unnest($8::bigint[]),
           jsonb_array_elements_text($9::jsonb), jsonb_array_elements_text($10::jsonb))
           AS x(run, url, rule, depth, status, f, ct, bytes, method, body)
         ON CONFLICT (run, url, method, body) DO UPDATE SET rule = EXCLUDED.rule, depth = EXCLUDED.depth, status = EXCLUDED.status,
           fetched_at = EXCLUDED.fetched_at, content_type = EXCLUDED.content_type, bytes = EXCLUDED.bytes
         WHERE EXCLUDED.fetched_at >= p.fetched_at`,
        [
          JSON.stringify(part.map((p) => p.run)),
          JSON.stringify(part.map((p) => p.url)),
          JSON.stringify(part.map((p) => p.rule)),
          part.map((p) => p.depth),
          part.map((p) => p.status),
          part.map((p) => p.fetchedAt),
          JSON.stringify(part.map((p) => p.contentType)),
          part.map((p) => p.bytes),
          JSON.stringify(part.map((p) => p.method)),
          JSON.stringify(part.map((p) => p.body)),
        ],
      );
    }
    return rows.length;
  }

  /** page_validators: one row per URL across runs (see SqliteStore.upsertRevisit), in URL order like every upsert here. */
  private async upsertRevisits(c: pg.PoolClient, pages: readonly PageRow[]): Promise<void> {
    const rows = latestRevisits(pages);
    for (let i = 0; i < rows.length; i += CHUNK) {
      const part = rows.slice(i, i + CHUNK);
      await c.query(
        `INSERT INTO ${this.s}.page_validators AS v (url, final_url, etag, last_modified, shape, items, links, run, fetched_at)
         SELECT url, fu, e, lm, sh, it, decode(l, 'base64'), run, to_timestamp(f / 1000.0)
         FROM ROWS FROM (jsonb_array_elements_text($1::jsonb), jsonb_array_elements_text($2::jsonb), jsonb_array_elements_text($3::jsonb),
           jsonb_array_elements_text($4::jsonb), jsonb_array_elements_text($5::jsonb), unnest($6::int[]), jsonb_array_elements_text($7::jsonb),
           jsonb_array_elements_text($8::jsonb), unnest($9::float8[])) AS x(url, fu, e, lm, sh, it, l, run, f)
         ON CONFLICT (url) DO UPDATE SET final_url = EXCLUDED.final_url, etag = EXCLUDED.etag, last_modified = EXCLUDED.last_modified,
           shape = EXCLUDED.shape, items = EXCLUDED.items, links = COALESCE(EXCLUDED.links, v.links), run = EXCLUDED.run, fetched_at = EXCLUDED.fetched_at
         WHERE EXCLUDED.fetched_at >= v.fetched_at`,
        [
          JSON.stringify(part.map((p) => p.url)),
          JSON.stringify(part.map((p) => p.revisit.finalUrl)),
          JSON.stringify(part.map((p) => p.revisit.etag)),
          JSON.stringify(part.map((p) => p.revisit.lastModified)),
          JSON.stringify(part.map((p) => p.revisit.shape)),
          part.map((p) => p.revisit.items),
          JSON.stringify(part.map((p) => p.revisit.links)),
          JSON.stringify(part.map((p) => p.run)),
          part.map((p) => p.fetchedAt),
        ],
      );
    }
  }

  async *iterateRevisits(opts: { pageSize?: number } = {}): AsyncIterable<StoredRevisit> {
    await this.ensureSchema();
    const size = Math.max(1, opts.pageSize ?? 1000);
    let after = '';
    for (;;) {
      const { rows } = await this.query(
        'read page validators',
        `SELECT url, final_url, etag, last_modified, shape, items, encode(links, 'base64') AS links, ${ms('fetched_at')} AS fetched_at
         FROM ${this.s}.page_validators WHERE url > $1 AND links IS NOT NULL AND (etag IS NOT NULL OR last_modified IS NOT NULL) ORDER BY url LIMIT $2`,
        [after, size],
      );
      for (const r of rows) {
        // encode(…, 'base64') wraps its output every 76 characters.
        yield { url: r.url, finalUrl: r.final_url, etag: r.etag, lastModified: r.last_modified, shape: r.shape, items: r.items, links: String(r.links).replace(/\n/g, ''), fetchedAt: Math.round(r.fetched_at) };
      }
      if (rows.length < size) return;
      after = rows[rows.length - 1].url;
    }
  }

  private async insertItems(c: pg.PoolClient, table: string, rows: readonly ItemRow[], policy: ConflictPolicy): Promise<{ inserted: number; written: number }> {
    // xmax = 0 holds exactly for rows this statement inserted (an updated row carries our transaction id), so
    // one round trip yields inserted and updated counts; conflicts are the rows that came back as neither.
    const onConflict =
      policy === 'update'
        ? `DO UPDATE SET data = EXCLUDED.data, url = EXCLUDED.url, rule = EXCLUDED.rule, run = EXCLUDED.run,
             fetched_at = EXCLUDED.fetched_at, updated_at = now()
           WHERE t.fetched_at <= EXCLUDED.fetched_at`
        : 'DO NOTHING';
    const { rows: out } = await c.query(
      `WITH w AS (
         INSERT INTO ${table} AS t (key, data, url, rule, run, fetched_at)
         SELECT k, d, u, r, rn, to_timestamp(f / 1000.0)
         FROM ROWS FROM (jsonb_array_elements_text($1::jsonb), jsonb_array_elements($2::jsonb), jsonb_array_elements_text($3::jsonb),
           jsonb_array_elements_text($4::jsonb), jsonb_array_elements_text($5::jsonb), unnest($6::float8[])) AS x(k, d, u, r, rn, f)
         ON CONFLICT (key) ${onConflict}
         RETURNING (xmax = 0) AS inserted
       ) SELECT count(*) FILTER (WHERE inserted)::int AS inserted, count(*)::int AS written FROM w`,
      [
        JSON.stringify(rows.map((r) => r.key)),
        // The items are JSON already: joined into one array they need no escaping, and the server parses them in
        // the same pass that builds the jsonb values.
        `[${rows.map((r) => r.json).join(',')}]`,
        JSON.stringify(rows.map((r) => r.url)),
        JSON.stringify(rows.map((r) => r.rule)),
        JSON.stringify(rows.map((r) => r.run)),
        rows.map((r) => r.fetchedAt),
      ],
    );
    return { inserted: out[0].inserted, written: out[0].written };
  }

  private async insertErrors(c: pg.PoolClient, errors: readonly ErrorRow[]): Promise<number> {
    if (errors.length === 0) return 0;
    const rows = [...errors].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    let n = 0;
    for (let i = 0; i < rows.length; i += CHUNK) {
      const part = rows.slice(i, i + CHUNK);
      const { rows: out } = await c.query(
        `WITH w AS (
           INSERT INTO ${this.s}.errors (error_id, kind, run, url, rule, type, key, message, at)
           SELECT id, kind, run, url, rule, type, key, message, to_timestamp(at / 1000.0)
           FROM ROWS FROM (jsonb_array_elements_text($1::jsonb), jsonb_array_elements_text($2::jsonb), jsonb_array_elements_text($3::jsonb),
             jsonb_array_elements_text($4::jsonb), jsonb_array_elements_text($5::jsonb), jsonb_array_elements_text($6::jsonb),
             jsonb_array_elements_text($7::jsonb), jsonb_array_elements_text($8::jsonb), unnest($9::float8[]))
             AS x(id, kind, run, url, rule, type, key, message, at)
           ON CONFLICT (error_id) DO NOTHING
           RETURNING 1
         ) SELECT count(*)::int AS n FROM w`,
        [
          JSON.stringify(part.map((e) => e.id)),
          JSON.stringify(part.map((e) => e.kind)),
          JSON.stringify(part.map((e) => e.run)),
          JSON.stringify(part.map((e) => e.url)),
          JSON.stringify(part.map((e) => e.rule)),
          JSON.stringify(part.map((e) => e.type)),
          JSON.stringify(part.map((e) => e.key)),
          JSON.stringify(part.map((e) => e.message)),
          part.map((e) => e.at),
        ],
      );
      n += out[0].n;
    }
    return n;
  }

  // Rows are shaped by the SQL at each call site (columns cast to JS-friendly types there), hence `any`.
  private async query(what: string, sql: string, params?: unknown[]): Promise<pg.QueryResult<any>> {
    this.assertOpen();
    try {
      return await this.pool.query(sql, params);
    } catch (err) {
      throw this.classify(err, what);
    }
  }

  private async tx<T>(what: string, fn: (c: pg.PoolClient) => Promise<T>): Promise<T> {
    this.assertOpen();
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
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
    if (err instanceof StoreUnavailableError || err instanceof StoreDataError) return err;
    const e = err as { code?: string; message?: string };
    const msg = e.message ?? String(err);
    const code = e.code ?? '';
    const where = `PostgreSQL ${this.location}`;
    if (isConnectionError(err) || TRANSIENT_CODES.has(code)) {
      return new StoreUnavailableError(`cannot reach ${where} to ${what}: ${msg} — is the server running and the URL's host and port right?`, { cause: err });
    }
    if (code.startsWith('22') || code.startsWith('23') || code === '54000') {
      return new StoreDataError(`${where} rejected the data (${what}): ${msg}`, { cause: err });
    }
    if (code === '28P01' || code === '28000') return new Error(`${where} refused the login: ${msg} — check the user and password in the store URL`, { cause: err });
    if (code === '3D000') return new Error(`${where}: ${msg} — create the database (createdb) or fix the URL`, { cause: err });
    if (code === '42501') return new Error(`${where}: ${msg} — the user needs CREATE and USAGE on schema "${this.schema}"`, { cause: err });
    return new Error(`${where} cannot ${what}: ${msg}`, { cause: err });
  }
}

// Connection exceptions, shutdowns, timeouts, too many connections, serialization failures, deadlocks: all pass.
const TRANSIENT_CODES = new Set(['57014', '57P01', '57P02', '57P03', '53300', '40001', '40P01', '55P03', '08000', '08003', '08006', '08001', '08004']);

function isConnectionError(err: unknown): boolean {
  const e = err as { code?: string; message?: string };
  if (e.code && /^(ECONNREFUSED|ECONNRESET|ETIMEDOUT|EPIPE|EHOSTUNREACH|ENETUNREACH|EAI_AGAIN|ENOTFOUND)$/.test(e.code)) return true;
  if (e.code && e.code.startsWith('08')) return true;
  return /Connection terminated|timeout exceeded when trying to connect|connection error|Query read timeout|not queryable|ECONNREFUSED/i.test(e.message ?? '');
}

const ITEM_COLUMNS = `id, key, data, url, rule, run, ${ms('fetched_at')} AS fetched_at, ${ms('first_seen')} AS first_seen, ${ms('updated_at')} AS updated_at`;

function ms(column: string): string {
  return `(extract(epoch from ${column}) * 1000)::float8`;
}

function clampLimit(limit: number | undefined): number {
  return Math.min(Math.max(1, limit ?? 100), 10_000);
}

function toItem(type: string, r: any): StoredItem {
  return {
    type,
    key: r.key,
    data: r.data as Record<string, unknown>,
    url: r.url,
    rule: r.rule,
    run: r.run,
    fetchedAt: Math.round(r.fetched_at),
    firstSeen: Math.round(r.first_seen),
    updatedAt: Math.round(r.updated_at),
  };
}
