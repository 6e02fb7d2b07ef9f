import type { RunChangeCounts } from '../../core/history/diff';
import type { ItemStore } from '../types';
import type { ItemChange } from './log';

// The one read-model of "what changed" (the CLI's `changes`, `export --changes`, the run summary and the monitor's
// feed): which closed runs a `--since` selects, and their changes.

export interface ChangeReport {
  readonly runs: readonly RunChangeCounts[];
  readonly changes: readonly ItemChange[];
}

/**
 * The task's runs a person asked about: without `since`, the last closed run; with a run id, the runs closed after
 * it; with a date (anything Date.parse reads, e.g. 2026-12-01 or an ISO time), the runs closed since then.
 */
export async function changesSince(store: ItemStore, task: string, opts: { since?: string; type?: string } = {}): Promise<ChangeReport> {
  const all = await store.history.runs(task);
  const runs = selectRuns(all, opts.since, task);
  const changes = await store.history.changes({ task, runs: runs.map((r) => r.run), ...(opts.type !== undefined ? { type: opts.type } : {}) });
  return { runs, changes };
}

export function selectRuns(all: readonly RunChangeCounts[], since: string | undefined, task: string): RunChangeCounts[] {
  if (since === undefined) return all.slice(-1);
  const at = all.findIndex((r) => r.run === since);
  if (at >= 0) return all.slice(at + 1);
  const ms = Date.parse(since);
  if (Number.isNaN(ms)) {
    const known = all.length ? `: its runs with history are ${all.slice(-5).map((r) => r.run).join(', ')}${all.length > 5 ? ' (last 5)' : ''}` : ' (no run of it has history yet)';
    throw new Error(`--since '${since}' is neither a run of task '${task}' with history nor a date (e.g. 2026-12-01)${known}`);
  }
  return all.filter((r) => r.finishedAt >= ms);
}
