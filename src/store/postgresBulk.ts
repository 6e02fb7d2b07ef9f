import type pg from 'pg';
import { historyAhead } from './history/postgres';
import { stateColumns, type Statement } from './history/log';
import { latestRevisits } from './revisits';
import { pageConflict, revisitConflict } from './rows';
import type { ConflictPolicy, ErrorRow, ItemRow, PageRow } from './types';

// A batch's rows into PostgreSQL, in bulk: multi-row INSERT ... SELECT FROM ROWS FROM(jsonb_array_elements(...),
// unnest(...)) ... ON CONFLICT, one statement per table per chunk. Text columns travel as JSON arrays rather than
// PostgreSQL arrays: JSON.stringify is native and the server parses JSON faster than array literals, which
// measured 1.7x faster than unnest(text[]). Each statement's rows are sorted (tables, then keys), so two batches
// lock index entries in the same order and cannot deadlock each other. `s` is the store's quoted schema.

/** Rows per INSERT statement: bounds the size of one array parameter; a batch may span several statements. */
export const CHUNK = 10_000;

/** The page upsert's own parameters ($1…$10); history's come after them. */
const PAGE_PARAMS = 10;

/** `history`: item history's writes for the batch, run in the same round trip as the first statement (historyAhead). */
export async function upsertPages(
  c: pg.PoolClient,
  s: string,
  pages: readonly PageRow[],
  history: readonly Statement[] = [],
): Promise<number> {
  const ahead = historyAhead(history, pages.length === 0 ? 0 : PAGE_PARAMS);
  for (const w of ahead.rest) await c.query(w.sql, w.params as unknown[]);
  if (pages.length === 0) {
    if (ahead.ctes) await c.query(`${ahead.ctes}SELECT 1`, ahead.params);
    return 0;
  }
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
    const text = `${i === 0 ? ahead.ctes : ''}INSERT INTO ${s}.pages AS p (run, url, rule, depth, status, fetched_at, content_type, bytes, method, body)
       SELECT run, url, rule, depth, status, to_timestamp(f / 1000.0), ct, bytes, method, body
       FROM ROWS FROM (jsonb_array_elements_text($1::jsonb), jsonb_array_elements_text($2::jsonb), jsonb_array_elements_text($3::jsonb),
         unnest($4::int[]), unnest($5::int[]), unnest($6::float8[]), jsonb_array_elements_text($7::jsonb), unnest($8::bigint[]),
         jsonb_array_elements_text($9::jsonb), jsonb_array_elements_text($10::jsonb))
         AS x(run, url, rule, depth, status, f, ct, bytes, method, body)
       ${pageConflict('p')}`;
    await c.query({
      name: i > 0 || ahead.fixedText ? preparedName(text) : undefined,
      text,
      values: [
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
        ...(i === 0 ? ahead.params : []),
      ],
    });
  }
  return rows.length;
}

/** page_validators: one row per URL across runs (see SqliteStore.upsertRevisit), in URL order like every upsert here. */
export async function upsertRevisits(c: pg.PoolClient, s: string, pages: readonly PageRow[]): Promise<void> {
  const rows = latestRevisits(pages);
  for (let i = 0; i < rows.length; i += CHUNK) {
    const part = rows.slice(i, i + CHUNK);
    await c.query(
      `INSERT INTO ${s}.page_validators AS v (url, final_url, etag, last_modified, shape, items, links, run, fetched_at)
       SELECT url, fu, e, lm, sh, it, decode(l, 'base64'), run, to_timestamp(f / 1000.0)
       FROM ROWS FROM (jsonb_array_elements_text($1::jsonb), jsonb_array_elements_text($2::jsonb), jsonb_array_elements_text($3::jsonb),
         jsonb_array_elements_text($4::jsonb), jsonb_array_elements_text($5::jsonb), unnest($6::int[]), jsonb_array_elements_text($7::jsonb),
         jsonb_array_elements_text($8::jsonb), unnest($9::float8[])) AS x(url, fu, e, lm, sh, it, l, run, f)
       ${revisitConflict('v')}`,
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

export interface InsertedItems {
  readonly inserted: number;
  readonly written: number;
  /**
   * With history: the items history must look at, `{ key, state }` (state: the row's history state before the
   * statement, stateColumns' as JSON; null when history did not know the item), that is every item but those this
   * statement updated to the data their row held as history's (a re-crawl's most).
   */
  readonly observe: readonly { readonly key: string; readonly state: Record<string, unknown> | null }[];
}

/** How history's statements read PostgreSQL's item columns (history/postgres.ts has the same for its executor). */
const PG_COLUMNS = {
  itemTimeMs: (column: string) => `round(extract(epoch from ${column}) * 1000)::bigint`,
  itemDataText: (column: string) => `${column}::text`,
};

export async function insertItems(
  c: pg.PoolClient,
  table: string,
  rows: readonly ItemRow[],
  policy: ConflictPolicy,
  history: boolean,
): Promise<InsertedItems> {
  // History in the row (history/log.ts): a newer fetch makes history's values the row's, keeps the run that first
  // saw the item (or sets it: stored before history, or forgotten), and brings a removed item back.
  const state = history
    ? `, first_run = coalesce(t.first_run, EXCLUDED.run), removed_run = NULL, seen_run = NULL, seen_data = NULL,
           seen_url = NULL, seen_at = NULL`
    : '';
  // The row held the data as history's (present, its own values): a newer fetch moves only where and when it was seen.
  const same = `t.data = EXCLUDED.data${history ? ' AND t.first_run IS NOT NULL AND t.removed_run IS NULL AND t.seen_run IS NULL' : ''}`;
  // xmax = 0 holds exactly for rows this statement inserted (an updated row carries our transaction id), so
  // one round trip yields inserted and updated counts; conflicts are the rows that came back as neither.
  // updated_at: when the data last changed (with history: or the item came back to it), as in SQLite's
  // (sqliteItems.ts). It is also how the statement tells history which rows moved: now() is the transaction's
  // start, which no earlier transaction's write of updated_at can equal.
  const onConflict =
    policy === 'update'
      ? `DO UPDATE SET data = EXCLUDED.data, url = EXCLUDED.url, rule = EXCLUDED.rule, run = EXCLUDED.run,
           fetched_at = EXCLUDED.fetched_at, updated_at = CASE WHEN ${same} THEN t.updated_at ELSE now() END${state}
         WHERE t.fetched_at <= EXCLUDED.fetched_at`
      : 'DO NOTHING';
  const upsert = `INSERT INTO ${table} AS t (key, data, url, rule, run, fetched_at, first_run)
       SELECT k, d, u, r, rn, to_timestamp(f / 1000.0), ${history ? 'rn' : 'NULL'}
       FROM ROWS FROM (jsonb_array_elements_text($1::jsonb), jsonb_array_elements($2::jsonb), jsonb_array_elements_text($3::jsonb),
         jsonb_array_elements_text($4::jsonb), jsonb_array_elements_text($5::jsonb), unnest($6::float8[])) AS x(k, d, u, r, rn, f)
       ON CONFLICT (key) ${onConflict}`;
  const probe = (key: string) =>
    `(SELECT to_json(o) FROM (SELECT ${stateColumns('p', PG_COLUMNS)} FROM ${table} p WHERE p.key = ${key} AND p.first_run IS NOT NULL) o)`;
  const text = !history
    ? `WITH w AS (${upsert} RETURNING (xmax = 0) AS inserted)
         SELECT count(*) FILTER (WHERE inserted)::int AS inserted, count(*)::int AS written FROM w`
    : // Item history's lookup in the same round trip. Every part of one statement sees the table as it was before
      // the statement (one snapshot), so `p` is the row before this batch: its old state, one index probe per item
      // history must decide on, in a scalar subquery (joins were planned as a scan of the table: estimates of freshly
      // filled tables are off). With policy update those are the rows the statement inserted or moved (updated_at
      // above): a row it did not update held a newer fetch, which history would not record either.
      policy === 'update'
      ? `WITH w AS (${upsert} RETURNING t.key, (xmax = 0) AS inserted, t.updated_at = now() AS moved)
         SELECT (SELECT count(*) FILTER (WHERE inserted) FROM w)::int AS inserted, (SELECT count(*) FROM w)::int AS written,
           (SELECT coalesce(json_agg(json_build_object('key', w.key,
             'state', CASE WHEN w.inserted THEN NULL ELSE ${probe('w.key')} END)), '[]') FROM w WHERE w.inserted OR w.moved) AS observe`
      : // Policy ignore updates no row: every item is history's to decide on, those not inserted with their state.
        `WITH w AS (${upsert} RETURNING t.key)
         SELECT (SELECT count(*) FROM w)::int AS inserted, (SELECT count(*) FROM w)::int AS written,
           (SELECT coalesce(json_agg(json_build_object('key', i.key, 'state', CASE WHEN w.key IS NULL THEN ${probe('i.key')} END)), '[]')
            FROM jsonb_array_elements_text($1::jsonb) AS i(key) LEFT JOIN w ON w.key = i.key) AS observe`;
  const { rows: out } = await c.query<{ inserted: number; written: number; observe?: InsertedItems['observe'] }>({
    name: preparedName(text),
    text,
    values: [
      JSON.stringify(rows.map((r) => r.key)),
      // The items are JSON already: joined into one array they need no escaping, and the server parses them in
      // the same pass that builds the jsonb values.
      `[${rows.map((r) => r.json).join(',')}]`,
      JSON.stringify(rows.map((r) => r.url)),
      JSON.stringify(rows.map((r) => r.rule)),
      JSON.stringify(rows.map((r) => r.run)),
      rows.map((r) => r.fetchedAt),
    ],
  });
  const r = out[0]!;
  return { inserted: r.inserted, written: r.written, observe: r.observe ?? [] };
}

export async function insertErrors(c: pg.PoolClient, s: string, errors: readonly ErrorRow[]): Promise<number> {
  if (errors.length === 0) return 0;
  const rows = [...errors].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  let n = 0;
  for (let i = 0; i < rows.length; i += CHUNK) {
    const part = rows.slice(i, i + CHUNK);
    const { rows: out } = await c.query<{ n: number }>(
      `WITH w AS (
         INSERT INTO ${s}.errors (error_id, kind, run, url, rule, type, key, message, at)
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
    n += out[0]?.n ?? 0;
  }
  return n;
}

/**
 * A name for a statement whose text is one of a few (arrays as parameters, whatever the rows): node-postgres then
 * prepares it once per connection, and PostgreSQL parses and plans it once instead of for every batch (item history's
 * lookup and writes were a third of a re-crawl's store time, most of it planning: bench/history.mjs, issue 33).
 * Texts that vary (the rare statements too large for one) stay unnamed, and so does anything past NAMED texts, so a
 * long-lived process never fills the server with them.
 */
export function preparedName(text: string): string | undefined {
  let n = names.get(text);
  if (!n && names.size < NAMED) names.set(text, (n = `crawl-studio-${names.size}`));
  return n;
}
const names = new Map<string, string>();
const NAMED = 200;
