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
// is decided by diff.ts. Tables: item_state (per type and key: first, last and removed run, last data),
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

/**
 * Statements writing state and change rows in a store's own bulk form (PostgreSQL: arrays, history/postgres.ts);
 * without one, multi-row VALUES in `rowsPerStatement` pieces.
 */
export interface HistoryRowWriter {
  states(rows: readonly ItemState[]): Statement;
  changes(rows: readonly ChangeRow[]): Statement;
}

/** The columns of item_state and item_changes, in the order the writes give them. */
export const STATE_COLUMNS = 'type, key, first_run, last_run, removed_run, data, url, fetched_at';
export const CHANGE_COLUMNS = 'run, type, key, kind, field, old_value, new_value, at';
/** What a write of a state or change row does to the row already there. */
export const STATE_CONFLICT = `ON CONFLICT (type, key) DO UPDATE SET first_run = excluded.first_run, last_run = excluded.last_run, removed_run = excluded.removed_run,
           data = excluded.data, url = excluded.url, fetched_at = excluded.fetched_at`;
// A later sighting in the same run keeps the run's first old value and brings the newest one.
export const CHANGE_CONFLICT =
  'ON CONFLICT (run, type, key, kind, field) DO UPDATE SET new_value = excluded.new_value, at = excluded.at';

/** An item's identity across types, as history's lookups are keyed. */
export const stateId = (type: string, key: string): string => `${type}\u0000${key}`;

export interface HistorySql {
  /** '' or 'schema.': what table names are prefixed with. */
  readonly prefix: string;
  /** An item table's fetched_at as ms since epoch (SQLite keeps ms, PostgreSQL a timestamptz). */
  itemTimeMs(column: string): string;
  /** An item table's data as JSON text (PostgreSQL keeps jsonb). */
  itemDataText(column: string): string;
  /**
   * Set by a store whose writeBatch leaves out of observe() the items its rows already held unchanged without
   * asking history whether it holds them as present (SQLite; PostgreSQL asks in the same statement): finishRun
   * then gives state to those it has never seen (a store older than item history) or saw removed.
   */
  readonly skipsUnchanged?: boolean;
  /** Rows per multi-row statement, largest first (SQLite: a few fixed sizes, see pieces); absent: all in one. */
  readonly rowsPerStatement?: readonly number[];
  all(sql: string, params?: readonly unknown[]): Promise<Row[]>;
  run(sql: string, params?: readonly unknown[]): Promise<void>;
  /** Runs fn in one transaction, retried as the store retries its own writes. */
  transaction<T>(what: string, fn: (sql: HistorySql) => Promise<T>): Promise<T>;
}

/**
 * The tables, for a store's schema step (`prefix` as in HistorySql). Types valid in SQLite and PostgreSQL.
 * `clustered` (SQLite): the tables are WITHOUT ROWID, stored in their primary key's order, so a changed item's
 * state is one B-tree page to read and write instead of two (the row's and its key index's), and a run's change
 * rows sit together: fewer pages a batch's commit writes to the WAL. `dataType` 'jsonb' (PostgreSQL): the state's data
 * as the item rows keep theirs, so the item upsert compares them as stored, without parsing JSON text per item.
 */
export function historySchema(prefix: string, opts: { clustered?: boolean; dataType?: 'text' | 'jsonb' } = {}): string {
  const table = opts.clustered ? ' WITHOUT ROWID' : '';
  return `
CREATE TABLE IF NOT EXISTS ${prefix}item_state (
  type text NOT NULL, key text NOT NULL, first_run text NOT NULL, last_run text NOT NULL, removed_run text,
  data ${opts.dataType ?? 'text'} NOT NULL, url text NOT NULL, fetched_at bigint NOT NULL, PRIMARY KEY (type, key)
)${table};
CREATE TABLE IF NOT EXISTS ${prefix}item_changes (
  run text NOT NULL, type text NOT NULL, key text NOT NULL, kind text NOT NULL, field text NOT NULL,
  old_value text, new_value text, at bigint NOT NULL, PRIMARY KEY (run, type, key, kind, field)
)${table};
CREATE TABLE IF NOT EXISTS ${prefix}history_runs (
  run text PRIMARY KEY, task text NOT NULL, complete integer NOT NULL, finished_at bigint NOT NULL,
  added bigint NOT NULL, changed bigint NOT NULL, removed bigint NOT NULL
);`;
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
  constructor(private readonly sql: HistorySql) {}

  private t(name: string): string {
    return this.sql.prefix + name;
  }

  /**
   * Records what a stored batch's items change; idempotent (a replayed batch finds its state already there).
   * `itemsMarkSeen`: the batch was stored with policy update, so each item's row in its type's table now says this
   * run saw it (its `run`); unchanged items then write nothing here, finishRun reads their last run from there.
   */
  async observe(
    items: readonly Sighting[],
    within: HistorySql = this.sql,
    opts: { itemsMarkSeen?: boolean } = {},
  ): Promise<void> {
    if (items.length === 0) return;
    await within.transaction('record item history', async (sql) => {
      for (let i = 0; i < items.length; i += CHUNK) {
        const chunk = items.slice(i, i + CHUNK);
        const found = await this.lookup(sql, chunk);
        for (const w of this.writes(chunk, found, { ...opts, rowsPerStatement: sql.rowsPerStatement }))
          await sql.run(w.sql, w.params);
      }
    });
  }

  /**
   * The items' state, every type at once (one round trip on PostgreSQL). SQL compares the data and returns only
   * items that are new, came back, or differ (by stateId; null: no state): one seen again as it was reads nothing
   * back (stores leave most of those out of observe altogether: see writeBatch).
   */
  private async lookup(sql: HistorySql, items: readonly Sighting[]): Promise<Map<string, ItemState | null>> {
    const found = new Map<string, ItemState | null>();
    for (const piece of pieces(items, sql.rowsPerStatement)) {
      const params: unknown[] = [];
      for (const s of piece) params.push(s.type, s.key, s.json);
      const rows = await sql.all(
        // VALUES as a subquery, not a CTE: SQLite ran the CTE form ~10× slower. Its columns are column1… in both.
        `SELECT v.column1 AS type, v.column2 AS key, s.key AS known, s.first_run, s.last_run, s.removed_run, s.data, s.url, s.fetched_at
         FROM (VALUES ${values(piece.length, 3)}) AS v LEFT JOIN ${this.t('item_state')} s ON s.type = v.column1 AND s.key = v.column2
         WHERE s.key IS NULL OR s.removed_run IS NOT NULL OR s.data <> v.column3`,
        params,
      );
      for (const r of rows) found.set(stateId(String(r.type), String(r.key)), stateOf(String(r.type), r));
    }
    return found;
  }

  /**
   * The statements recording these sightings, given their states as looked up (`found`, by stateId: null, no
   * state; absent, or present with the same data: seen again as it was). A store that reads the states in its own
   * statement (PostgreSQL's item upsert) runs these where it likes in the batch's transaction (postgres.ts: ahead
   * of its page upsert, one round trip); observe runs them one by one.
   */
  writes(
    items: readonly Sighting[],
    found: ReadonlyMap<string, ItemState | null>,
    opts: { itemsMarkSeen?: boolean; rowsPerStatement?: readonly number[]; rows?: HistoryRowWriter } = {},
  ): Statement[] {
    const states: ItemState[] = [];
    const changes: ChangeRow[] = [];
    // Seen again as it was: stored with policy update, its item row already says this run saw it (finishRun
    // copies that over); otherwise one narrow UPDATE per type and run records where and when it was seen.
    const seen = new Map<string, Sighting[]>();
    for (const s of items) {
      const prev = found.get(stateId(s.type, s.key));
      if (prev === undefined || (prev !== null && prev.removedRun === null && prev.data === s.json)) {
        if (opts.itemsMarkSeen !== true) {
          const group = stateId(s.type, s.run);
          (seen.get(group) ?? seen.set(group, []).get(group)!).push(s);
        }
        continue;
      }
      const out = recordSighting(prev ?? undefined, s);
      if (out.state) states.push(out.state);
      for (const c of out.changes) changes.push(c);
    }
    const out: Statement[] = [];
    for (const again of seen.values()) {
      again.sort((a, b) => cmp(a.key, b.key));
      for (const piece of pieces(again, opts.rowsPerStatement))
        out.push(this.markSeen(piece[0]!.type, piece[0]!.run, piece));
    }
    // Sorted: concurrent writers (PostgreSQL) then lock rows in one order and cannot deadlock each other.
    states.sort((a, b) => cmp(a.type, b.type) || cmp(a.key, b.key));
    changes.sort((a, b) => cmp(a.type, b.type) || cmp(a.key, b.key) || cmp(a.kind, b.kind) || cmp(a.field, b.field));
    if (opts.rows) {
      if (states.length) out.push(opts.rows.states(states));
      if (changes.length) out.push(opts.rows.changes(changes));
      return out;
    }
    for (const piece of pieces(states, opts.rowsPerStatement))
      out.push({
        sql: `INSERT INTO ${this.t('item_state')} (${STATE_COLUMNS}) VALUES ${values(piece.length, 8)} ${STATE_CONFLICT}`,
        params: piece.flatMap(stateValues),
      });
    for (const piece of pieces(changes, opts.rowsPerStatement))
      out.push({
        sql: `INSERT INTO ${this.t('item_changes')} (${CHANGE_COLUMNS}) VALUES ${values(piece.length, 8)} ${CHANGE_CONFLICT}`,
        params: piece.flatMap(changeValues),
      });
    return out;
  }

  /** Unchanged items seen again (by one run, of one type): their last run, page and fetch time (an older fetch: none). */
  private markSeen(type: string, run: string, list: readonly Sighting[]): Statement {
    const params: unknown[] = [run];
    for (const s of list) params.push(s.key, s.url, s.fetchedAt);
    params.push(type);
    return {
      sql: `UPDATE ${this.t('item_state')} SET last_run = ?, url = v.column2, fetched_at = CAST(v.column3 AS bigint)
       FROM (VALUES ${values(list.length, 3)}) AS v
       WHERE ${this.t('item_state')}.type = ? AND ${this.t('item_state')}.key = v.column1 AND ${this.t('item_state')}.fetched_at <= CAST(v.column3 AS bigint)`,
      params,
    };
  }

  /**
   * Closes a run's history: a complete run marks removed the task's items it did not see (items of pages the
   * site answered 304 were seen: they are unchanged), counts the run's changes, and prunes past the retention.
   * Idempotent: a run already closed returns its counts as recorded.
   */
  async finishRun(f: FinishRun): Promise<RunChangeCounts> {
    return this.sql.transaction('close the run in item history', async (sql) => {
      const done = await sql.all(`SELECT * FROM ${this.t('history_runs')} WHERE run = ?`, [f.run]);
      if (done[0]) return toCounts(done[0]);
      await this.catchUpSeen(sql, f.run);
      if (f.complete) {
        const gone = `FROM ${this.t('item_state')} s WHERE s.removed_run IS NULL AND s.last_run <> ?
            AND s.last_run IN (SELECT run FROM ${this.t('runs')} WHERE task = ?)
            AND s.url NOT IN (SELECT url FROM ${this.t('pages')} WHERE run = ? AND status = 304)`;
        await sql.run(
          `INSERT INTO ${this.t('item_changes')} (run, type, key, kind, field, old_value, new_value, at)
           SELECT CAST(? AS text), s.type, s.key, 'removed', '', s.data, NULL, CAST(? AS bigint) ${gone} ON CONFLICT DO NOTHING`,
          [f.run, f.finishedAt, f.run, f.task, f.run],
        );
        await sql.run(
          `UPDATE ${this.t('item_state')} SET removed_run = ? WHERE removed_run IS NULL AND (type, key) IN (SELECT type, key FROM ${this.t('item_changes')} WHERE run = ? AND kind = 'removed')`,
          [f.run, f.run],
        );
      }
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
   * Unchanged items this run saw in batches stored with policy update (observe's itemsMarkSeen) wrote nothing to
   * item_state: their item rows carry this run. One UPDATE per item type brings their last run, page and fetch
   * time over before removals are decided.
   */
  private async catchUpSeen(sql: HistorySql, run: string): Promise<void> {
    const state = this.t('item_state');
    for (const r of await sql.all(`SELECT type, table_name FROM ${this.t('item_types')} ORDER BY type`)) {
      const table = this.sql.prefix + quoteIdent(String(r.table_name));
      if (sql.skipsUnchanged) {
        // Items it skipped that history does not hold as present: stored before the store kept history, or
        // removed by an earlier run and back as they were. Added by this run, as in recordSighting.
        const unknown = `FROM ${table} t WHERE t.run = ? AND NOT EXISTS (SELECT 1 FROM ${state} s WHERE s.type = ? AND s.key = t.key AND s.removed_run IS NULL)`;
        await sql.run(
          `INSERT INTO ${this.t('item_changes')} (run, type, key, kind, field, old_value, new_value, at)
           SELECT CAST(? AS text), CAST(? AS text), t.key, 'added', '', NULL, ${sql.itemDataText('t.data')}, ${sql.itemTimeMs('t.fetched_at')} ${unknown} ON CONFLICT DO NOTHING`,
          [run, String(r.type), run, String(r.type)],
        );
        await sql.run(
          `INSERT INTO ${state} (type, key, first_run, last_run, removed_run, data, url, fetched_at)
           SELECT CAST(? AS text), t.key, t.run, t.run, NULL, ${sql.itemDataText('t.data')}, t.url, ${sql.itemTimeMs('t.fetched_at')} ${unknown}
           ON CONFLICT (type, key) DO UPDATE SET last_run = excluded.last_run, removed_run = NULL, data = excluded.data, url = excluded.url, fetched_at = excluded.fetched_at`,
          [String(r.type), run, String(r.type)],
        );
      }
      await sql.run(
        `UPDATE ${state} SET last_run = t.run, url = t.url, fetched_at = ${sql.itemTimeMs('t.fetched_at')}
         FROM ${table} t WHERE ${state}.type = ? AND ${state}.key = t.key AND t.run = ? AND ${state}.last_run <> ? AND ${state}.removed_run IS NULL
           AND ${state}.fetched_at <= ${sql.itemTimeMs('t.fetched_at')}`,
        [String(r.type), run, run],
      );
    }
  }

  /** Drops the changes (and removed items' state) of runs past the retention; the items themselves stay. */
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
    for (const r of old) {
      const run = String(r.run);
      await sql.run(`DELETE FROM ${this.t('item_changes')} WHERE run = ?`, [run]);
      await sql.run(`DELETE FROM ${this.t('item_state')} WHERE removed_run = ?`, [run]);
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
    const out: ItemState[] = [];
    for (let i = 0; i < keys.length; i += CHUNK) {
      const chunk = keys.slice(i, i + CHUNK);
      const rows = await this.sql.all(
        `SELECT * FROM ${this.t('item_state')} WHERE type = ? AND key IN (${chunk.map(() => '?').join(', ')})`,
        [type, ...chunk],
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

/** A state row's values, in STATE_COLUMNS' order. */
export const stateValues = (s: ItemState): unknown[] => [
  s.type,
  s.key,
  s.firstRun,
  s.lastRun,
  s.removedRun,
  s.data,
  s.url,
  s.fetchedAt,
];
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

/** A looked-up row (`known`: the state's key, null when there is none) as the state found. */
export function stateOf(type: string, r: Row): ItemState | null {
  return r.known === null || r.known === undefined ? null : toState(type, r);
}

/** An item_state row as the state it holds. */
export function toState(type: string, r: Row): ItemState {
  return {
    type,
    key: String(r.key),
    firstRun: String(r.first_run),
    lastRun: String(r.last_run),
    removedRun: nullable(r.removed_run),
    // Text in SQLite; jsonb in PostgreSQL, which node-postgres hands back parsed.
    data: text(r.data),
    url: String(r.url),
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
