import type { ChangeKind, RunChangeCounts } from '../../core/history/diff';
import type { ItemStore } from '../types';
import type { ItemChange } from './log';

// The one read-model of "what changed" (the CLI's `changes`, `export --changes`, the run summary, the monitor's
// feed, task page and /metrics, the editor's Results filter and dashboard): which closed runs a `--since` selects,
// their changes, one run's counts as its history recorded them when it closed, and a run's changed items as rows.

export interface ChangeReport {
  readonly runs: readonly RunChangeCounts[];
  readonly changes: readonly ItemChange[];
}

/**
 * The task's runs a person asked about: without `since`, the last closed run; with a run id, the runs closed after
 * it; with a date (anything Date.parse reads, e.g. 2026-12-01 or an ISO time), the runs closed since then.
 */
export async function changesSince(
  store: ItemStore,
  task: string,
  opts: { since?: string; type?: string } = {},
): Promise<ChangeReport> {
  const all = await store.history.runs(task);
  const runs = selectRuns(all, opts.since, task);
  const changes = await store.history.changes({
    task,
    runs: runs.map((r) => r.run),
    ...(opts.type !== undefined ? { type: opts.type } : {}),
  });
  return { runs, changes };
}

export function selectRuns(
  all: readonly RunChangeCounts[],
  since: string | undefined,
  task: string,
): RunChangeCounts[] {
  if (since === undefined) return all.slice(-1);
  const at = all.findIndex((r) => r.run === since);
  if (at >= 0) return all.slice(at + 1);
  const ms = Date.parse(since);
  if (Number.isNaN(ms)) {
    const known = all.length
      ? `: its runs with history are ${all
          .slice(-5)
          .map((r) => r.run)
          .join(', ')}${all.length > 5 ? ' (last 5)' : ''}`
      : ' (no run of it has history yet)';
    throw new Error(
      `--since '${since}' is neither a run of task '${task}' with history nor a date (e.g. 2026-12-01)${known}`,
    );
  }
  return all.filter((r) => r.finishedAt >= ms);
}

/**
 * One run's added, changed and removed counts, as recorded when its history closed (the figures of the run
 * summary's "items changed", `changes`, the editor's dashboard and Results view, the monitor and /metrics). null:
 * the run has not closed its history (it still runs, or stopped before finalizing) or its history was pruned.
 */
export async function runChangeCounts(store: ItemStore, task: string, run: string): Promise<RunChangeCounts | null> {
  return (await store.history.runs(task)).find((r) => r.run === run) ?? null;
}

/** The run a "what changed" view shows first: the latest complete run (the only kind that marks items removed), else the latest. */
export function defaultChangeRun(runs: readonly RunChangeCounts[]): RunChangeCounts | null {
  return [...runs].reverse().find((r) => r.complete) ?? runs[runs.length - 1] ?? null;
}

/** A field a run changed: its value before and after (absent: the field was missing). */
export interface FieldDiff {
  readonly field: string;
  readonly old?: unknown;
  readonly new?: unknown;
}

/** One item a run added, changed or removed, whole: a row of the Results view's change filter. */
export interface ChangedItem {
  readonly type: string;
  readonly key: string;
  readonly kind: ChangeKind;
  /** The item as the run left it: added or changed, its values after the run; removed, its last values before. */
  readonly data: Record<string, unknown>;
  /** The page it was last seen on (from its history state), null when its state was pruned. */
  readonly url: string | null;
  /** The changed fields ('changed' only), in the item's field order. */
  readonly fields: readonly FieldDiff[];
  /** The fetch that saw the change, or the run's finish for 'removed'. */
  readonly at: number;
}

/**
 * The items a run added, changed or removed, one row each, by type and key. A removed item comes from its history
 * (it may be gone from the items table); a changed one is its last known state with the run's new values.
 */
export async function changedItems(
  store: ItemStore,
  task: string,
  run: string,
  opts: { type?: string } = {},
): Promise<ChangedItem[]> {
  const changes = await store.history.changes({
    task,
    runs: [run],
    ...(opts.type !== undefined ? { type: opts.type } : {}),
  });
  const byItem = new Map<string, ItemChange[]>();
  for (const c of changes) {
    const id = `${c.type}\n${c.key}`;
    (byItem.get(id) ?? byItem.set(id, []).get(id)!).push(c);
  }
  const keysByType = new Map<string, string[]>();
  for (const list of byItem.values())
    (keysByType.get(list[0]!.type) ?? keysByType.set(list[0]!.type, []).get(list[0]!.type)!).push(list[0]!.key);
  const states = new Map<string, { data: string; url: string }>();
  for (const [type, keys] of keysByType)
    for (const st of await store.history.states(type, keys)) states.set(`${type}\n${st.key}`, st);
  const out: ChangedItem[] = [];
  for (const [id, list] of byItem) {
    const first = list[0]!;
    const state = states.get(id);
    const kind: ChangeKind = list.some((c) => c.kind === 'removed')
      ? 'removed'
      : list.some((c) => c.kind === 'added')
        ? 'added'
        : 'changed';
    const fields =
      kind === 'changed'
        ? list
            .filter((c) => c.kind === 'changed')
            .map((c) => ({
              field: c.field!,
              ...('old' in c ? { old: c.old } : {}),
              ...('new' in c ? { new: c.new } : {}),
            }))
        : [];
    let data: Record<string, unknown>;
    if (kind === 'removed') data = asObject(list.find((c) => c.kind === 'removed')!.old);
    else if (kind === 'added') data = asObject(list.find((c) => c.kind === 'added')!.new);
    else {
      data = state ? asObject(parseJson(state.data)) : {};
      for (const f of fields) {
        if ('new' in f) data[f.field] = f.new;
        else delete data[f.field];
      }
    }
    out.push({
      type: first.type,
      key: first.key,
      kind,
      data,
      url: state?.url ?? null,
      fields,
      at: Math.max(...list.map((c) => c.at)),
    });
  }
  return out;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

function asObject(v: unknown): Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
    ? { ...(v as Record<string, unknown>) }
    : { value: v };
}
