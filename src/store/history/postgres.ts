import type pg from 'pg';
import type { HistorySql, Row } from './log';

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

/** `?` -> `$n`, in order (the history SQL has no `?` inside literals). */
function numbered(sql: string): string {
  let i = 0;
  return sql.replace(/\?/g, () => `$${++i}`);
}
