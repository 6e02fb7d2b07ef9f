import { nullable, text } from '../columnText';
import { quoteIdent } from '../tables';
import {
  recordSighting,
  type ChangeKind,
  type ChangeRow,
  type HistoryRetention,
  type ItemState,
  type RunChangeCounts,
  type Sighting,
} from '../../core/history/diff';

// Item history over either store: the same SQL (`?` placeholders, standard ON CONFLICT) runs on SQLite and
// PostgreSQL through a small executor each store provides (history/sqlite.ts, history/postgres.ts); what to record
// is decided by diff.ts.
//
// An item's state (the run it was first seen in, the run that found it gone, its last data, page and fetch) lives in
// its own row of its type's table: first_run and removed_run, and the row's data, run, url and fetched_at, which a
// batch stored with policy update writes anyway. So a re-crawl's unchanged items cost history nothing but the
// comparison the store makes while it updates their row, and a changed item's old data is the row the batch is
// about to rewrite: no second table to probe and write per item (issue 33: the store's batches wrote a third more
// pages with one). Only a batch stored with policy ignore, which keeps a row's first data, gives history values of
// its own: seen_run, seen_data, seen_url and seen_at, set together (the row's own while NULL). Tables of their own:
// item_changes (per run: added, changed field, removed) and history_runs (a finished run's counts).

export type Row = Record<string, unknown>;

/** One statement of history's writes (`?` placeholders). */
export interface Statement {
  readonly sql: string;
  readonly params: readonly unknown[];
  /**
   * Its text is one of a few, whatever the rows (arrays as parameters): worth preparing once per connection
   * (PostgreSQL plans each unnamed statement again; postgresBulk.ts names such statements).
   */
  readonly fixedText?: boolean;
}

/** Statements writing change rows in a store's own bulk form (PostgreSQL: arrays, history/postgres.ts). */
export interface HistoryRowWriter {
  changes(rows: readonly ChangeRow[]): Statement;
}

/** The columns of item_changes, in the order the writes give them. */
export const CHANGE_COLUMNS = 'run, type, key, kind, field, old_value, new_value, at';
// A later sighting in the same run keeps the run's first old value and brings the newest one.
export const CHANGE_CONFLICT =
  'ON CONFLICT (run, type, key, kind, field) DO UPDATE SET new_value = excluded.new_value, at = excluded.at';

/**
 * History's columns of an item table (`data`, `time`: the table's own types for its data and fetched_at). NULL
 * first_run: history does not know the item (stored with history off, or forgotten with a pruned run).
 */
export const itemHistoryColumns = (data: string, time: string): readonly (readonly [string, string])[] => [
  ['first_run', 'text'],
  ['removed_run', 'text'],
  ['seen_run', 'text'],
  ['seen_data', data],
  ['seen_url', 'text'],
  ['seen_at', time],
];

/** An item's identity across types, as history's lookups are keyed. */
export const stateId = (type: string, key: string): string => `${type}\u0000${key}`;

/** How a store's SQL reads an item table's columns. */
export interface ItemColumnSql {
  /** An item table's fetched_at as ms since epoch (SQLite keeps ms, PostgreSQL a timestamptz). */
  itemTimeMs(column: string): string;
  /** An item table's data as JSON text (PostgreSQL keeps jsonb). */
  itemDataText(column: string): string;
}

export interface HistorySql extends ItemColumnSql {
  /** '' or 'schema.': what table names are prefixed with. */
  readonly prefix: string;
  /** Rows per multi-row statement, largest first (SQLite: a few fixed sizes, see pieces); absent: all in one. */
  readonly rowsPerStatement?: readonly number[];
  all(sql: string, params?: readonly unknown[]): Promise<Row[]>;
  run(sql: string, params?: readonly unknown[]): Promise<void>;
  /** Runs fn in one transaction, retried as the store retries its own writes. */
  transaction<T>(what: string, fn: (sql: HistorySql) => Promise<T>): Promise<T>;
}

/**
 * An item row's history state as toState reads it (`a`: the row's alias): history's own values where policy ignore
 * set them, the row's otherwise. Only rows with a first_run have one.
 */
export function stateColumns(a: string, sql: ItemColumnSql): string {
  return `${a}.key, ${a}.first_run, coalesce(${a}.seen_run, ${a}.run) AS last_run, ${a}.removed_run,
    ${sql.itemDataText(`coalesce(${a}.seen_data, ${a}.data)`)} AS data, coalesce(${a}.seen_url, ${a}.url) AS url,
    ${sql.itemTimeMs(`coalesce(${a}.seen_at, ${a}.fetched_at)`)} AS fetched_at`;
}

/**
 * The tables, for a store's schema step (`prefix` as in HistorySql). Types valid in SQLite and PostgreSQL.
 * `clustered` (SQLite): item_changes is WITHOUT ROWID, stored in its primary key's order, so a run's change rows sit
 * together and a change is one B-tree page to write instead of two (the row's and its key index's).
 */
export function historySchema(prefix: string, opts: { clustered?: boolean } = {}): string {
  const table = opts.clustered ? ' WITHOUT ROWID' : '';
  return `
CREATE TABLE IF NOT EXISTS ${prefix}item_changes (
  run text NOT NULL, type text NOT NULL, key text NOT NULL, kind text NOT NULL, field text NOT NULL,
  old_value text, new_value text, at bigint NOT NULL, PRIMARY KEY (run, type, key, kind, field)
)${table};
CREATE TABLE IF NOT EXISTS ${prefix}history_runs (
  run text PRIMARY KEY, task text NOT NULL, complete integer NOT NULL, finished_at bigint NOT NULL,
  added bigint NOT NULL, changed bigint NOT NULL, removed bigint NOT NULL
);`;
}

/**
 * Copies the item_state table of stores made before the state moved into the item rows into an item table's rows
 * (`t`; `?`: the type): the row's values stand where history's are the same data seen no later, as finishRun used
 * to copy them over; history's own otherwise (policy ignore). Then the table can go. `sql` says how this store reads
 * the row's fetched_at as ms, and writes item_state's data and time (ms) as the row's types.
 */
export function stateFromItemStateSql(
  t: string,
  state: string,
  sql: { rowMs: (column: string) => string; data: (column: string) => string; time: (column: string) => string },
): string {
  const own = `NOT (${sql.data('s.data')} = ${t}.data AND s.fetched_at <= ${sql.rowMs(`${t}.fetched_at`)})`;
  return `UPDATE ${t} SET first_run = s.first_run, removed_run = s.removed_run,
      seen_run = CASE WHEN ${own} THEN s.last_run END, seen_data = CASE WHEN ${own} THEN ${sql.data('s.data')} END,
      seen_url = CASE WHEN ${own} THEN s.url END, seen_at = CASE WHEN ${own} THEN ${sql.time('s.fetched_at')} END
    FROM ${state} s WHERE s.type = ? AND s.key = ${t}.key`;
}

/** A sighting and the item's state before it (null: history does not know the item). */
export interface Sighted {
  readonly sighting: Sighting;
  readonly prev: ItemState | null;
}

/** One recorded change, as `crawl-studio changes` and the exports read it. */
export interface ItemChange {
  readonly run: string;
  readonly type: string;
  readonly key: string;
  readonly kind: ChangeKind;
  /** The changed field; null for 'added' and 'removed'. */
  readonly field: string | null;
  /** The old value (a field's, or the whole removed item); undefined for 'added'. */
  readonly old?: unknown;
  readonly new?: unknown;
  /** ms since epoch: the fetch that saw it, or the run's finish for 'removed'. */
  readonly at: number;
}

export interface ChangeQuery {
  readonly task: string;
  /** Changes of these runs (oldest first); see runsSince. */
  readonly runs: readonly string[];
  readonly type?: string;
}

export interface FinishRun {
  readonly task: string;
  readonly run: string;
  /** Only a complete run marks items removed (see diff.ts incompleteReason). */
  readonly complete: boolean;
  readonly finishedAt: number;
  readonly retention: HistoryRetention;
}

const CHUNK = 200;

export class ItemHistoryLog {
  /** insertChanges' texts, by rows. */
  private readonly insertTexts = new Map<number, string>();

  constructor(private readonly sql: HistorySql) {}

  private t(name: string): string {
    return this.sql.prefix + name;
  }

  /**
   * What sightings record, given each item's state before the batch: the change rows, and the states to keep (a
   * store whose item rows already took them, with policy update, writes only the changes).
   */
  decide(sighted: readonly Sighted[]): { changes: ChangeRow[]; states: ItemState[] } {
    const changes: ChangeRow[] = [];
    const states: ItemState[] = [];
    for (const { sighting, prev } of sighted) {
      const out = recordSighting(prev ?? undefined, sighting);
      if (out.state) states.push(out.state);
      for (const c of out.changes) changes.push(c);
    }
    return { changes, states };
  }

  /**
   * The statements writing a batch's change rows: idempotent (a replayed batch finds its rows there, and its items'
   * rows already hold what it saw, so it decides no change at all).
   */
  changeWrites(
    changes: readonly ChangeRow[],
    opts: { rowsPerStatement?: readonly number[]; rows?: HistoryRowWriter } = {},
  ): Statement[] {
    if (changes.length === 0) return [];
    // Sorted: concurrent writers (PostgreSQL) then lock rows in one order and cannot deadlock each other.
    const sorted = [...changes].sort(
      (a, b) => cmp(a.type, b.type) || cmp(a.key, b.key) || cmp(a.kind, b.kind) || cmp(a.field, b.field),
    );
    if (opts.rows) return [opts.rows.changes(sorted)];
    const out: Statement[] = [];
    for (const piece of pieces(sorted, opts.rowsPerStatement))
      out.push({ sql: this.insertChanges(piece.length), params: piece.flatMap(changeValues) });
    return out;
  }

  /**
   * The multi-row INSERT of n change rows, its text made once per n: built anew for every batch, the text (and the
   * executor's statement cache hashing it) cost more than the rows' insert.
   */
  private insertChanges(n: number): string {
    let sql = this.insertTexts.get(n);
    if (sql === undefined)
      this.insertTexts.set(
        n,
        (sql = `INSERT INTO ${this.t('item_changes')} (${CHANGE_COLUMNS}) VALUES ${values(n, 8)} ${CHANGE_CONFLICT}`),
      );
    return sql;
  }

  /** Writes change rows (in the store's transaction when one is open: writeBatch's). */
  async recordChanges(changes: readonly ChangeRow[]): Promise<void> {
    if (changes.length === 0) return;
    await this.sql.transaction('record item history', async (sql) => {
      for (const w of this.changeWrites(changes, { rowsPerStatement: sql.rowsPerStatement }))
        await sql.run(w.sql, w.params);
    });
  }

  /**
   * Closes a run's history: a complete run marks removed the task's items it did not see (items of pages the
   * site answered 304 were seen: they are unchanged), counts the run's changes, and prunes past the retention.
   * Idempotent: a run already closed returns its counts as recorded. `on`: the store's transaction to run in
   * (ItemStore.endRun's), when it is not the one this log's executor would open.
   */
  async finishRun(f: FinishRun, on: HistorySql = this.sql): Promise<RunChangeCounts> {
    return on.transaction('close the run in item history', async (sql) => {
      const done = await sql.all(`SELECT * FROM ${this.t('history_runs')} WHERE run = ?`, [f.run]);
      if (done[0]) return toCounts(done[0]);
      if (f.complete) for (const { type, table } of await this.tables(sql)) await this.markRemoved(sql, f, type, table);
      const counts = await sql.all(
        `SELECT kind, COUNT(*) AS n FROM (SELECT DISTINCT type, key, kind FROM ${this.t('item_changes')} WHERE run = ?) d GROUP BY kind`,
        [f.run],
      );
      const n = (k: ChangeKind) => Number(counts.find((r) => r.kind === k)?.n ?? 0);
      const out: RunChangeCounts = {
        run: f.run,
        task: f.task,
        complete: f.complete,
        finishedAt: f.finishedAt,
        added: n('added'),
        changed: n('changed'),
        removed: n('removed'),
      };
      await sql.run(
        `INSERT INTO ${this.t('history_runs')} (run, task, complete, finished_at, added, changed, removed) VALUES (?, ?, ?, ?, ?, ?, ?)`,
        [out.run, out.task, out.complete ? 1 : 0, out.finishedAt, out.added, out.changed, out.removed],
      );
      await this.prune(sql, f);
      return out;
    });
  }

  /**
   * Items of a type the task saw before and this complete run did not: a removed row each, and the run in their
   * removed_run. One pass over the type's rows (an unchanged item's row names the run that last stored it); the
   * second statement only when the pass found some (a re-crawl of an unchanged site finds none).
   */
  private async markRemoved(sql: HistorySql, f: FinishRun, type: string, table: string): Promise<void> {
    const last = 'coalesce(t.seen_run, t.run)';
    const removed = await sql.all(
      `INSERT INTO ${this.t('item_changes')} (${CHANGE_COLUMNS})
       SELECT CAST(? AS text), CAST(? AS text), t.key, 'removed', '', ${sql.itemDataText('coalesce(t.seen_data, t.data)')}, NULL, CAST(? AS bigint)
       FROM ${table} t WHERE t.first_run IS NOT NULL AND t.removed_run IS NULL AND ${last} <> ?
         AND ${last} IN (SELECT run FROM ${this.t('runs')} WHERE task = ?)
         AND NOT EXISTS (SELECT 1 FROM ${this.t('pages')} p WHERE p.run = ? AND p.status = 304 AND p.url = coalesce(t.seen_url, t.url))
       ON CONFLICT DO NOTHING RETURNING key`,
      [f.run, type, f.finishedAt, f.run, f.task, f.run],
    );
    if (removed.length === 0) return;
    await sql.run(
      `UPDATE ${table} SET removed_run = ? WHERE removed_run IS NULL AND first_run IS NOT NULL
         AND key IN (SELECT key FROM ${this.t('item_changes')} WHERE run = ? AND type = ? AND kind = 'removed')`,
      [f.run, f.run, type],
    );
  }

  /** The item types and their tables (quoted, prefixed), in type order. */
  private async tables(sql: HistorySql): Promise<{ type: string; table: string }[]> {
    const rows = await sql.all(`SELECT type, table_name FROM ${this.t('item_types')} ORDER BY type`);
    return rows.map((r) => ({ type: String(r.type), table: this.sql.prefix + quoteIdent(String(r.table_name)) }));
  }

  /**
   * Drops the changes of runs past the retention, and forgets the items they removed (their rows stay, as items
   * the store holds: if they come back, history adds them anew).
   */
  private async prune(sql: HistorySql, f: FinishRun): Promise<void> {
    const old =
      'runs' in f.retention
        ? await sql.all(
            `SELECT run FROM ${this.t('history_runs')} WHERE task = ? ORDER BY finished_at DESC, run DESC LIMIT 1000000000 OFFSET ?`,
            [f.task, f.retention.runs],
          )
        : await sql.all(`SELECT run FROM ${this.t('history_runs')} WHERE task = ? AND finished_at < ?`, [
            f.task,
            f.finishedAt - f.retention.ms,
          ]);
    if (old.length === 0) return;
    const tables = await this.tables(sql);
    for (const r of old) {
      const run = String(r.run);
      await sql.run(`DELETE FROM ${this.t('item_changes')} WHERE run = ?`, [run]);
      for (const { table } of tables)
        await sql.run(
          `UPDATE ${table} SET first_run = NULL, removed_run = NULL, seen_run = NULL, seen_data = NULL, seen_url = NULL, seen_at = NULL
           WHERE removed_run = ?`,
          [run],
        );
      await sql.run(`DELETE FROM ${this.t('history_runs')} WHERE run = ?`, [run]);
    }
  }

  /** The task's closed runs, oldest first, with their counts. */
  async runs(task: string): Promise<RunChangeCounts[]> {
    const rows = await this.sql.all(
      `SELECT * FROM ${this.t('history_runs')} WHERE task = ? ORDER BY finished_at, run`,
      [task],
    );
    return rows.map(toCounts);
  }

  /** The last known state of these items of a type (a removed item's too, until its run is pruned). */
  async states(type: string, keys: readonly string[]): Promise<ItemState[]> {
    const table = (await this.tables(this.sql)).find((t) => t.type === type)?.table;
    if (!table) return [];
    const out: ItemState[] = [];
    for (let i = 0; i < keys.length; i += CHUNK) {
      const chunk = keys.slice(i, i + CHUNK);
      const rows = await this.sql.all(
        `SELECT ${stateColumns('t', this.sql)} FROM ${table} t WHERE t.first_run IS NOT NULL AND t.key IN (${chunk.map(() => '?').join(', ')})`,
        chunk,
      );
      out.push(...rows.map((r) => toState(type, r)));
    }
    return out;
  }

  /** The changes of the given runs, by run (in the order given), type, key, kind and field. */
  async changes(q: ChangeQuery): Promise<ItemChange[]> {
    if (q.runs.length === 0) return [];
    const rows = await this.sql.all(
      `SELECT * FROM ${this.t('item_changes')} WHERE run IN (${q.runs.map(() => '?').join(', ')})${q.type !== undefined ? ' AND type = ?' : ''}
       ORDER BY type, key, kind, field`,
      [...q.runs, ...(q.type !== undefined ? [q.type] : [])],
    );
    const order = new Map(q.runs.map((r, i) => [r, i]));
    return rows.map(toChange).sort((a, b) => order.get(a.run)! - order.get(b.run)!);
  }
}

/**
 * A list cut into pieces of the executor's sizes, in order. SQLite caches its statements by text, which depends on
 * how many rows one carries: with batches of every size it would prepare (and keep) one per size.
 */
function* pieces<T>(list: readonly T[], sizes: readonly number[] | undefined): Iterable<readonly T[]> {
  if (!sizes) {
    // One statement per CHUNK rows: a batch's writes stay far below PostgreSQL's 65,535 parameters a statement.
    for (let i = 0; i < list.length; i += CHUNK) yield list.slice(i, i + CHUNK);
    return;
  }
  let i = 0;
  for (const size of sizes) for (; list.length - i >= size; i += size) yield list.slice(i, i + size);
}

/** A change row's values, in CHANGE_COLUMNS' order. */
export const changeValues = (c: ChangeRow): unknown[] => [
  c.run,
  c.type,
  c.key,
  c.kind,
  c.field,
  c.oldValue,
  c.newValue,
  c.at,
];

const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

function values(rows: number, cols: number): string {
  const one = `(${Array.from({ length: cols }, () => '?').join(', ')})`;
  return Array.from({ length: rows }, () => one).join(', ');
}

/** A row read with stateColumns as the state it holds. */
export function toState(type: string, r: Row): ItemState {
  return {
    type,
    key: String(r.key),
    firstRun: String(r.first_run),
    lastRun: String(r.last_run),
    removedRun: nullable(r.removed_run),
    // Text in SQLite; in PostgreSQL text too (stateColumns casts), or parsed when it came inside to_json.
    data: text(r.data),
    url: nullable(r.url) ?? '',
    fetchedAt: Number(r.fetched_at),
  };
}

function toCounts(r: Row): RunChangeCounts {
  return {
    run: String(r.run),
    task: String(r.task),
    complete: Number(r.complete) === 1,
    finishedAt: Number(r.finished_at),
    added: Number(r.added),
    changed: Number(r.changed),
    removed: Number(r.removed),
  };
}

function toChange(r: Row): ItemChange {
  const parse = (v: unknown) => (v === null || v === undefined ? undefined : (JSON.parse(text(v)) as unknown));
  const kind = String(r.kind) as ChangeKind;
  return {
    run: String(r.run),
    type: String(r.type),
    key: String(r.key),
    kind,
    field: kind === 'changed' ? String(r.field) : null,
    ...(r.old_value !== null && r.old_value !== undefined ? { old: parse(r.old_value) } : {}),
    ...(r.new_value !== null && r.new_value !== undefined ? { new: parse(r.new_value) } : {}),
    at: Number(r.at),
  };
}
