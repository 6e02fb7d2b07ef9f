import type pg from 'pg';
import { historySchema, itemHistoryColumns, stateFromItemStateSql } from './history/log';
import { itemTableName, quoteIdent } from './tables';

// The PostgreSQL store's tables, in one schema per task (`s`: its quoted name). DDL runs under a transaction-level
// advisory lock, because concurrent CREATE TABLE IF NOT EXISTS can still fail on the catalog's unique index.

/** The store's own tables, migrated to the current shape; in the caller's transaction. */
export async function createSchema(c: pg.PoolClient, s: string, schema: string): Promise<void> {
  await c.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`crawl-studio:${schema}`]);
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
  const { rows } = await c.query<{ migrated: boolean }>(`SELECT to_regclass($1) IS NOT NULL AS migrated`, [
    `${s}.pages_run_request`,
  ]);
  if (!rows[0]?.migrated) {
    await c.query(`
      ALTER TABLE ${s}.pages ADD COLUMN IF NOT EXISTS method text NOT NULL DEFAULT 'GET';
      ALTER TABLE ${s}.pages ADD COLUMN IF NOT EXISTS body text NOT NULL DEFAULT '';
      CREATE UNIQUE INDEX IF NOT EXISTS pages_run_request ON ${s}.pages (run, url, method, body);
      ALTER TABLE ${s}.pages DROP CONSTRAINT IF EXISTS pages_run_url_key;`);
  }
  await c.query(historySchema(`${s}.`));
  await moveStateIntoRows(c, s);
}

/** History's columns of a PostgreSQL item table: jsonb data and timestamptz times, like the row's own. */
const HISTORY_COLUMNS = itemHistoryColumns('jsonb', 'timestamptz');

/**
 * Stores made before item history's state moved into the item rows: their item tables get history's columns, and
 * the state item_state kept is copied into the rows, then dropped. Checked first: ALTER TABLE locks the table even
 * when there is nothing to do, and a store whose rows another session holds locked must still open.
 */
async function moveStateIntoRows(c: pg.PoolClient, s: string): Promise<void> {
  const { rows: types } = await c.query<{ type: string; table_name: string }>(
    `SELECT type, table_name FROM ${s}.item_types ORDER BY type`,
  );
  const { rows: found } = await c.query<{ state: boolean }>(`SELECT to_regclass($1) IS NOT NULL AS state`, [
    `${s}.item_state`,
  ]);
  const hasState = found[0]?.state === true;
  for (const { type, table_name } of types) {
    const t = `${s}.${quoteIdent(table_name)}`;
    const { rows: cols } = await c.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_attribute WHERE attrelid = to_regclass($1) AND attname = ANY($2) AND NOT attisdropped`,
      [t, HISTORY_COLUMNS.map(([name]) => name)],
    );
    if ((cols[0]?.n ?? 0) < HISTORY_COLUMNS.length)
      await c.query(
        `ALTER TABLE ${t} ${HISTORY_COLUMNS.map(([name, ty]) => `ADD COLUMN IF NOT EXISTS ${name} ${ty}`).join(', ')}`,
      );
    if (hasState)
      await c.query(
        stateFromItemStateSql(t, `${s}.item_state`, {
          rowMs: (col) => `round(extract(epoch from ${col}) * 1000)::bigint`,
          // Stores before that kept the state's data as text.
          data: (col) => `${col}::jsonb`,
          time: (col) => `to_timestamp(${col} / 1000.0)`,
        }).replace('?', '$1'),
        [type],
      );
  }
  if (hasState) await c.query(`DROP TABLE ${s}.item_state`);
}

/** An item type's table and its row in item_types (the advisory lock already held); in the caller's transaction. */
export async function createItemTable(c: pg.PoolClient, s: string, type: string): Promise<void> {
  const table = itemTableName(type);
  const t = `${s}.${quoteIdent(table)}`;
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
      updated_at timestamptz NOT NULL DEFAULT now(),
      ${HISTORY_COLUMNS.map(([name, ty]) => `${name} ${ty}`).join(', ')}
    )`);
  await c.query(`INSERT INTO ${s}.item_types (type, table_name) VALUES ($1, $2) ON CONFLICT (type) DO NOTHING`, [
    type,
    table,
  ]);
}
