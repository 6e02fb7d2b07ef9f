import type pg from 'pg';
import type { ItemState } from '../../core/history/diff';
import {
  CHANGE_COLUMNS,
  CHANGE_CONFLICT,
  changeValues,
  type HistoryRowWriter,
  type HistorySql,
  type Row,
  type Statement,
} from './log';

// Item history's executor on a PostgreSQL store: `?` placeholders become $1, $2…; a transaction is the store's
// own (a pooled client, its error classification and release rules).

export function postgresHistorySql(
  schema: string,
  tx: <T>(what: string, fn: (c: pg.PoolClient) => Promise<T>) => Promise<T>,
): HistorySql {
  const over = (c: pg.PoolClient) => postgresClientSql(schema, c);
  const outside: HistorySql = {
    prefix: `${schema}.`,
    itemTimeMs,
    itemDataText,
    all: (sql, params) => tx('read item history', (c) => over(c).all(sql, params)),
    run: (sql, params) => tx('write item history', (c) => over(c).run(sql, params)),
    transaction: (what, fn) => tx(what, (c) => fn(over(c))),
  };
  return outside;
}

/** History SQL on a client already in a transaction (a store's batch): its own transactions are that one. */
export function postgresClientSql(schema: string, c: pg.PoolClient): HistorySql {
  const self: HistorySql = {
    prefix: `${schema}.`,
    itemTimeMs,
    itemDataText,
    all: async (sql, params = []) => (await c.query(numbered(sql), params as unknown[])).rows as Row[],
    run: async (sql, params = []) => {
      await c.query(numbered(sql), params as unknown[]);
    },
    transaction: (_what, fn) => fn(self),
  };
  return self;
}

const itemDataText = (column: string) => `${column}::text`;
const itemTimeMs = (column: string) => `round(extract(epoch from ${column}) * 1000)::bigint`;

/** `?` -> `$n`, in order from `$from + 1` (the history SQL has no `?` inside literals). */
function numbered(sql: string, from = 0): string {
  let i = from;
  return sql.replace(/\?/g, () => `$${++i}`);
}

/** Parameters one round trip may carry (PostgreSQL's limit is 65,535), with room for the statement it rides on. */
const MAX_PARAMS = 60_000;

/**
 * History's writes as data-modifying CTEs (`WITH h0 AS (… RETURNING 1), …`) put ahead of another statement whose
 * own parameters are $1…$`offset`: both in one round trip. They touch change rows and item rows, the other statement
 * neither, and different rows each, so the one snapshot they share changes nothing. Writes past what one statement may carry come in `rest`,
 * each a statement of its own (`WITH … SELECT 1`, numbered from $1: for c.query as they are).
 */
export function historyAhead(
  writes: readonly Statement[],
  offset: number,
): { ctes: string; params: unknown[]; rest: Statement[]; fixedText: boolean } {
  const groups: Statement[][] = [];
  let size = MAX_PARAMS;
  for (const w of writes) {
    if (size + w.params.length > MAX_PARAMS) {
      groups.push([]);
      size = 0;
    }
    groups.at(-1)!.push(w);
    size += w.params.length;
  }
  const render = (group: readonly Statement[], from: number) => {
    const params: unknown[] = [];
    const ctes = group.map((w, i) => {
      const sql = `h${i} AS (${numbered(w.sql, from + params.length)} RETURNING 1)`;
      params.push(...w.params);
      return sql;
    });
    return { ctes: ctes.length ? `WITH ${ctes.join(', ')} ` : '', params };
  };
  const first = render(groups[0] ?? [], offset);
  return {
    ...first,
    fixedText: writes.every((w) => w.fixedText === true),
    rest: groups.slice(1).map((g) => {
      const r = render(g, 0);
      return { sql: `${r.ctes}SELECT 1`, params: r.params };
    }),
  };
}

/**
 * History's change rows as arrays, one per column (`unnest`): one statement text whatever the rows, which the batch's
 * page statement it rides on can then be prepared with (postgresBulk.ts), instead of a multi-row VALUES planned
 * anew for each batch.
 */
export function postgresHistoryRows(schema: string): HistoryRowWriter {
  return {
    changes: (rows) => ({
      sql: `INSERT INTO ${schema}.item_changes (${CHANGE_COLUMNS})
        SELECT * FROM unnest(?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::bigint[]) ${CHANGE_CONFLICT}`,
      params: columns(rows.map(changeValues), 8),
      fixedText: true,
    }),
  };
}

/**
 * History's own values in item rows of one table (`table`: schema-qualified, quoted), for items stored with policy
 * ignore, which keeps a row's first data while history moves on (history/log.ts). Sorted by key, as the batch's
 * item statement locked them.
 */
export function postgresSeenWrite(table: string, states: readonly ItemState[]): Statement {
  const rows = [...states]
    .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
    .map((s) => [s.key, s.firstRun, s.lastRun, s.data, s.url, s.fetchedAt]);
  return {
    sql: `UPDATE ${table} AS t SET first_run = v.f, removed_run = NULL, seen_run = v.r, seen_data = v.d, seen_url = v.u,
        seen_at = to_timestamp(v.a / 1000.0)
      FROM unnest(?::text[], ?::text[], ?::text[], ?::jsonb[], ?::text[], ?::float8[]) AS v(key, f, r, d, u, a) WHERE t.key = v.key`,
    params: columns(rows, 6),
    fixedText: true,
  };
}

const columns = (rows: readonly unknown[][], n: number) => Array.from({ length: n }, (_, i) => rows.map((r) => r[i]));
