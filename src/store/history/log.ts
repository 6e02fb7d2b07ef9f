import { recordSighting, type ChangeKind, type ChangeRow, type HistoryRetention, type ItemState, type RunChangeCounts, type Sighting } from '../../core/history/diff';

// Item history over either store: the same SQL (`?` placeholders, standard ON CONFLICT) runs on SQLite and
// PostgreSQL through a small executor each store provides (history/sqlite.ts, history/postgres.ts); what to record
// is decided by diff.ts. Tables: item_state (per type and key: first, last and removed run, last data),
// item_changes (per run: added, changed field, removed) and history_runs (a finished run's counts).

export type Row = Record<string, unknown>;

export interface HistorySql {
  /** '' or 'schema.': what table names are prefixed with. */
  readonly prefix: string;
  all(sql: string, params?: readonly unknown[]): Promise<Row[]>;
  run(sql: string, params?: readonly unknown[]): Promise<void>;
  /** Runs fn in one transaction, retried as the store retries its own writes. */
  transaction<T>(what: string, fn: (sql: HistorySql) => Promise<T>): Promise<T>;
}

/** The tables, for a store's schema step (`prefix` as in HistorySql). Types valid in SQLite and PostgreSQL. */
export function historySchema(prefix: string): string {
  return `
CREATE TABLE IF NOT EXISTS ${prefix}item_state (
  type text NOT NULL, key text NOT NULL, first_run text NOT NULL, last_run text NOT NULL, removed_run text,
  data text NOT NULL, url text NOT NULL, fetched_at bigint NOT NULL, PRIMARY KEY (type, key)
);
CREATE TABLE IF NOT EXISTS ${prefix}item_changes (
  run text NOT NULL, type text NOT NULL, key text NOT NULL, kind text NOT NULL, field text NOT NULL,
  old_value text, new_value text, at bigint NOT NULL, PRIMARY KEY (run, type, key, kind, field)
);
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

  /** Records what a stored batch's items change; idempotent (a replayed batch finds its state already there). */
  async observe(items: readonly Sighting[], within: HistorySql = this.sql): Promise<void> {
    if (items.length === 0) return;
    await within.transaction('record item history', async (sql) => {
      for (let i = 0; i < items.length; i += CHUNK) await this.observeChunk(sql, items.slice(i, i + CHUNK));
    });
  }

  private async observeChunk(sql: HistorySql, items: readonly Sighting[]): Promise<void> {
    const byType = new Map<string, Sighting[]>();
    for (const it of items) (byType.get(it.type) ?? byType.set(it.type, []).get(it.type)!).push(it);
    const states: ItemState[] = [];
    const changes: ChangeRow[] = [];
    for (const [type, list] of byType) {
      const rows = await sql.all(
        `SELECT * FROM ${this.t('item_state')} WHERE type = ? AND key IN (${list.map(() => '?').join(', ')})`,
        [type, ...list.map((s) => s.key)],
      );
      const prev = new Map(rows.map((r) => [String(r.key), toState(r)]));
      for (const s of list) {
        const out = recordSighting(prev.get(s.key), s);
        if (out.state) states.push(out.state);
        changes.push(...out.changes);
      }
    }
    // Sorted: concurrent writers (PostgreSQL) then lock rows in one order and cannot deadlock each other.
    states.sort((a, b) => cmp(a.type, b.type) || cmp(a.key, b.key));
    changes.sort((a, b) => cmp(a.type, b.type) || cmp(a.key, b.key) || cmp(a.kind, b.kind) || cmp(a.field, b.field));
    if (states.length > 0) {
      await sql.run(
        `INSERT INTO ${this.t('item_state')} (type, key, first_run, last_run, removed_run, data, url, fetched_at) VALUES ${values(states.length, 8)}
         ON CONFLICT (type, key) DO UPDATE SET first_run = excluded.first_run, last_run = excluded.last_run, removed_run = excluded.removed_run,
           data = excluded.data, url = excluded.url, fetched_at = excluded.fetched_at`,
        states.flatMap((s) => [s.type, s.key, s.firstRun, s.lastRun, s.removedRun, s.data, s.url, s.fetchedAt]),
      );
    }
    if (changes.length > 0) {
      // A later sighting in the same run keeps the run's first old value and brings the newest one.
      await sql.run(
        `INSERT INTO ${this.t('item_changes')} (run, type, key, kind, field, old_value, new_value, at) VALUES ${values(changes.length, 8)}
         ON CONFLICT (run, type, key, kind, field) DO UPDATE SET new_value = excluded.new_value, at = excluded.at`,
        changes.flatMap((c) => [c.run, c.type, c.key, c.kind, c.field, c.oldValue, c.newValue, c.at]),
      );
    }
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
      const out: RunChangeCounts = { run: f.run, task: f.task, complete: f.complete, finishedAt: f.finishedAt, added: n('added'), changed: n('changed'), removed: n('removed') };
      await sql.run(
        `INSERT INTO ${this.t('history_runs')} (run, task, complete, finished_at, added, changed, removed) VALUES (?, ?, ?, ?, ?, ?, ?)`,
        [out.run, out.task, out.complete ? 1 : 0, out.finishedAt, out.added, out.changed, out.removed],
      );
      await this.prune(sql, f);
      return out;
    });
  }

  /** Drops the changes (and removed items' state) of runs past the retention; the items themselves stay. */
  private async prune(sql: HistorySql, f: FinishRun): Promise<void> {
    const old =
      'runs' in f.retention
        ? await sql.all(`SELECT run FROM ${this.t('history_runs')} WHERE task = ? ORDER BY finished_at DESC, run DESC LIMIT 1000000000 OFFSET ?`, [f.task, f.retention.runs])
        : await sql.all(`SELECT run FROM ${this.t('history_runs')} WHERE task = ? AND finished_at < ?`, [f.task, f.finishedAt - f.retention.ms]);
    for (const r of old) {
      const run = String(r.run);
      await sql.run(`DELETE FROM ${this.t('item_changes')} WHERE run = ?`, [run]);
      await sql.run(`DELETE FROM ${this.t('item_state')} WHERE removed_run = ?`, [run]);
      await sql.run(`DELETE FROM ${this.t('history_runs')} WHERE run = ?`, [run]);
    }
  }

  /** The task's closed runs, oldest first, with their counts. */
  async runs(task: string): Promise<RunChangeCounts[]> {
    const rows = await this.sql.all(`SELECT * FROM ${this.t('history_runs')} WHERE task = ? ORDER BY finished_at, run`, [task]);
    return rows.map(toCounts);
  }

  /** The last known state of these items of a type (a removed item's too, until its run is pruned). */
  async states(type: string, keys: readonly string[]): Promise<ItemState[]> {
    const out: ItemState[] = [];
    for (let i = 0; i < keys.length; i += CHUNK) {
      const chunk = keys.slice(i, i + CHUNK);
      const rows = await this.sql.all(`SELECT * FROM ${this.t('item_state')} WHERE type = ? AND key IN (${chunk.map(() => '?').join(', ')})`, [type, ...chunk]);
      out.push(...rows.map(toState));
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

const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

function values(rows: number, cols: number): string {
  const one = `(${Array.from({ length: cols }, () => '?').join(', ')})`;
  return Array.from({ length: rows }, () => one).join(', ');
}

function toState(r: Row): ItemState {
  return {
    type: String(r.type),
    key: String(r.key),
    firstRun: String(r.first_run),
    lastRun: String(r.last_run),
    removedRun: r.removed_run === null || r.removed_run === undefined ? null : String(r.removed_run),
    data: String(r.data),
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
  const parse = (v: unknown) => (v === null || v === undefined ? undefined : (JSON.parse(String(v)) as unknown));
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
