import { dirname } from 'node:path';
import { parseArgs } from 'node:util';
import type { RunChangeCounts } from '../core/history/diff';
import { groupDigits as n } from '../core/units';
import { storeUrlFor } from '../run/storeAttachment';
import type { Writable } from 'node:stream';
import { changeRecord, changesSince, exportChanges, openStore, type ChangeReport, type ItemChange, type ItemStore } from '../store';
import { loadTaskFile } from '../workspace/taskFile';
import type { NotifyOutcome } from '../run/notify';

// `crawl-studio changes TASK [--since RUN|DATE] [--type T] [--json]`: what the last run (or the runs since) added,
// changed (field: old → new) and removed, from the store's item history (store/history).

export class ChangesUsageError extends Error {}

export async function cmdChanges(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: { since: { type: 'string' }, type: { type: 'string' }, json: { type: 'boolean' }, store: { type: 'string' } },
  });
  if (positionals.length !== 1) throw new ChangesUsageError('changes takes one task file');
  const task = await loadTaskFile(positionals[0]!);
  const store = await openStore(values.store ?? storeUrlFor(task), { task: task.name, cwd: dirname(task.file) });
  try {
    let report: ChangeReport;
    try {
      report = await changesSince(store, task.name, { since: values.since, type: values.type });
    } catch (err) {
      if (values.since !== undefined && /--since/.test((err as Error).message)) throw new ChangesUsageError((err as Error).message);
      throw err;
    }
    if (values.json) console.log(JSON.stringify({ runs: report.runs, changes: report.changes.map(changeRecord) }, null, 2));
    else for (const line of changeLines(task.name, report, await notifyOutcomes(store))) console.log(line);
    return 0;
  } finally {
    await store.close();
  }
}

/** Each run's webhook delivery, as recorded in its summary (run/notify.ts). */
async function notifyOutcomes(store: ItemStore): Promise<Map<string, NotifyOutcome>> {
  const out = new Map<string, NotifyOutcome>();
  for (const r of await store.readRuns()) if (r.extra?.notify) out.set(r.run, r.extra.notify as NotifyOutcome);
  return out;
}

/** The human listing: per run a headline with its counts, then one line per added, changed or removed item. */
export function changeLines(task: string, report: ChangeReport, notified: ReadonlyMap<string, NotifyOutcome> = new Map()): string[] {
  if (report.runs.length === 0) return [`${task}: no run has item history yet (a run records it when it finishes)`];
  const out: string[] = [];
  for (const run of report.runs) {
    out.push(runHeadline(run));
    const sent = notified.get(run.run);
    if (sent) out.push(`  notify: ${sent.status}${sent.attempts ? ` after ${sent.attempts} attempt${sent.attempts === 1 ? '' : 's'}` : ''}${sent.reason ? ` — ${sent.reason}` : ''}`);
    const mine = report.changes.filter((c) => c.run === run.run);
    for (const [item, list] of groupByItem(mine)) out.push(...itemLines(item, list));
  }
  return out;
}

export function runHeadline(r: RunChangeCounts): string {
  const when = new Date(r.finishedAt).toISOString();
  const counts = `${n(r.added)} added, ${n(r.changed)} changed, ${n(r.removed)} removed`;
  return `run ${r.run} (finished ${when}): ${counts}${r.complete ? '' : ' — not complete, so no item was marked removed'}`;
}

function groupByItem(changes: readonly ItemChange[]): Map<string, ItemChange[]> {
  const out = new Map<string, ItemChange[]>();
  for (const c of changes) {
    const id = `${c.type} ${c.key}`;
    (out.get(id) ?? out.set(id, []).get(id)!).push(c);
  }
  return out;
}

function itemLines(item: string, list: readonly ItemChange[]): string[] {
  const show = (v: unknown) => (v === undefined ? '(none)' : JSON.stringify(v));
  const out: string[] = [];
  for (const c of list) {
    if (c.kind === 'added') out.push(`  + ${item}`);
    else if (c.kind === 'removed') out.push(`  - ${item}`);
  }
  const changed = list.filter((c) => c.kind === 'changed');
  if (changed.length) out.push(`  ~ ${item}: ${changed.map((c) => `${c.field}: ${show(c.old)} → ${show(c.new)}`).join(', ')}`);
  return out;
}

/** `export --changes`: the changes `changes` would list, as JSONL or CSV. */
export async function exportChangesOf(
  store: ItemStore,
  task: string,
  opts: { format: string; since?: string; type?: string; out: Writable; csvRaw: boolean },
): Promise<{ items: number; types: string[] }> {
  if (opts.format !== 'jsonl' && opts.format !== 'csv') throw new ChangesUsageError(`export --changes writes jsonl or csv, not '${opts.format}'`);
  let report: ChangeReport;
  try {
    report = await changesSince(store, task, { since: opts.since, type: opts.type });
  } catch (err) {
    if (opts.since !== undefined && /--since/.test((err as Error).message)) throw new ChangesUsageError((err as Error).message);
    throw err;
  }
  const items = await exportChanges(report.changes, { format: opts.format, out: opts.out, csvRaw: opts.csvRaw });
  return { items, types: [...new Set(report.changes.map((c) => c.type))] };
}

/** The run summary's line about the run's changes (storeAttachment's finalize puts them under `changes`). */
export function summaryChangeLines(summary: Readonly<Record<string, unknown>> | null | undefined, taskFile: string): string[] {
  const c = summary?.changes as (RunChangeCounts & { incomplete: string | null }) | undefined;
  if (!c) return [];
  const why = c.incomplete ? `; not complete (${c.incomplete}), so nothing was marked removed` : '';
  return [`  items changed   ${n(c.added)} added, ${n(c.changed)} changed, ${n(c.removed)} removed${why} (crawl-studio changes ${taskFile})`];
}
