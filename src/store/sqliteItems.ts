import type { DatabaseSync, StatementSync } from 'node:sqlite';
import type { ChangeRow } from '../core/history/diff';
import { stateColumns, toState, type ItemHistoryLog, type Sighted } from './history/log';
import { bind } from './sqliteDriver';
import { quoteIdent } from './tables';
import type { ConflictPolicy, ItemRow } from './types';

// A batch's item rows in the SQLite store, and what they change in item history, whose state lives in the same
// rows (history/log.ts). node:sqlite is synchronous: each item costs a statement or two of an in-process B-tree,
// so rows go one statement each, with the statements prepared once per table.

/** One item table's statements. */
export interface ItemTableStatements {
  readonly insert: StatementSync;
  /**
   * A newer fetch of the data the row holds, which history holds as present and as the row's: only where and when
   * it was seen move (a re-crawl's most items).
   */
  readonly touch: StatementSync;
  /** A newer fetch: the row takes it (and, with history, history's state with it). */
  readonly update: StatementSync;
  /** The item's history state (stateColumns), when history knows it. */
  readonly state: StatementSync;
  /** History's own values for a row that keeps its first data (policy ignore). */
  readonly seen: StatementSync;
}

export function itemTableStatements(db: DatabaseSync, table: string, history: boolean): ItemTableStatements {
  const t = quoteIdent(table);
  // History in the row: a newer fetch makes history's values the row's (seen_* NULL), keeps the run that first saw
  // the item (or sets it: stored before history, or forgotten), and brings a removed item back.
  const state = history
    ? ', first_run = coalesce(first_run, ?9), removed_run = NULL, seen_run = NULL, seen_data = NULL, seen_url = NULL, seen_at = NULL'
    : '';
  return {
    insert: db.prepare(
      `INSERT INTO ${t} (key, data, url, rule, run, fetched_at, first_seen, updated_at, first_run) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (key) DO NOTHING`,
    ),
    touch: db.prepare(
      `UPDATE ${t} SET url = ?, rule = ?, run = ?, fetched_at = ? WHERE key = ? AND fetched_at <= ? AND data = ?
       AND first_run IS NOT NULL AND removed_run IS NULL AND seen_run IS NULL`,
    ),
    // updated_at: when the data last changed (with history: or the item came back to it), as in PostgreSQL's
    // (postgresBulk.ts). With history a row reaches this statement only then; without, the data says.
    update: db.prepare(
      `UPDATE ${t} SET data = ?1, url = ?2, rule = ?3, run = ?4, fetched_at = ?5,
         updated_at = ${history ? '?6' : 'CASE WHEN data = ?1 THEN updated_at ELSE ?6 END'}${state}
       WHERE key = ?7 AND fetched_at <= ?8`,
    ),
    state: db.prepare(
      `SELECT ${stateColumns('t', { itemTimeMs: (c) => c, itemDataText: (c) => c })} FROM ${t} t WHERE t.key = ? AND t.first_run IS NOT NULL`,
    ),
    seen: db.prepare(
      `UPDATE ${t} SET first_run = ?, removed_run = NULL, seen_run = ?, seen_data = ?, seen_url = ?, seen_at = ? WHERE key = ?`,
    ),
  };
}

export interface ItemWrites {
  readonly inserted: number;
  readonly updated: number;
  readonly conflicts: number;
  /** The change rows the batch records (history on), for the same transaction. */
  readonly changes: readonly ChangeRow[];
}

/**
 * Stores items (in the caller's transaction). `history`: the store keeps item history; the items whose rows did not
 * already hold them as history knows them (new, changed, back, or stored with policy ignore) are decided by it.
 */
export function writeItems(
  items: readonly ItemRow[],
  policy: ConflictPolicy,
  now: number,
  statementsOf: (type: string) => ItemTableStatements,
  history: ItemHistoryLog | null,
): ItemWrites {
  let inserted = 0;
  let updated = 0;
  let conflicts = 0;
  const sighted: Sighted[] = [];
  const ignored: { sighted: Sighted; s: ItemTableStatements }[] = [];
  for (const item of items) {
    const s = statementsOf(item.type);
    const firstRun = history ? item.run : null;
    const r = s.insert.run(
      ...bind([item.key, item.json, item.url, item.rule, item.run, item.fetchedAt, now, now, firstRun]),
    );
    if (Number(r.changes) > 0) {
      inserted++;
      if (history) sighted.push({ sighting: item, prev: null });
      continue;
    }
    conflicts++;
    if (policy === 'update') {
      // Older fetches never overwrite newer ones: replays and concurrent writers then agree on the result.
      if (history) {
        const t = s.touch.run(
          ...bind([item.url, item.rule, item.run, item.fetchedAt, item.key, item.fetchedAt, item.json]),
        );
        if (Number(t.changes) > 0) {
          updated++;
          continue;
        }
        // The old state first: the update below replaces it.
        sighted.push({ sighting: item, prev: stateOf(s, item) });
      }
      const u = s.update.run(
        ...bind([
          item.json,
          item.url,
          item.rule,
          item.run,
          item.fetchedAt,
          now,
          item.key,
          item.fetchedAt,
          ...(history ? [item.run] : []),
        ]),
      );
      updated += Number(u.changes);
    } else if (history) {
      ignored.push({ sighted: { sighting: item, prev: stateOf(s, item) }, s });
    }
  }
  if (!history) return { inserted, updated, conflicts, changes: [] };
  const changes = [...history.decide(sighted).changes];
  // Policy ignore: the row keeps its first data, history's own values move on.
  for (const { sighted: one, s } of ignored) {
    const out = history.decide([one]);
    for (const st of out.states) s.seen.run(...bind([st.firstRun, st.lastRun, st.data, st.url, st.fetchedAt, st.key]));
    changes.push(...out.changes);
  }
  return { inserted, updated, conflicts, changes };
}

function stateOf(s: ItemTableStatements, item: ItemRow) {
  const row = s.state.get(item.key);
  return row ? toState(item.type, row) : null;
}
