import { dirname } from 'node:path';
import type { RunChangeCounts } from '../../core/history/diff';
import { groupDigits as n } from '../../core/units';
import { storeUrlFor } from '../../run/storeAttachment';
import type { Writable } from 'node:stream';
import {
  changeRecord,
  changesSince,
  exportChanges,
  openStore,
  type ChangeReport,
  type ItemChange,
  type ItemStore,
} from '../../store';
import { loadTaskFile } from '../../workspace/taskFile';
import type { NotifyOutcome } from '../../run/notify';
import { command, UsageError } from '../spec';
import { JSON_OPTION, STORE_OPTION } from '../options';
import { EXIT } from '../exitCodes';

// `crawl-studio changes TASK [--since RUN|DATE] [--type T] [--json]`: what the last run (or the runs since) added,
// changed (field: old → new) and removed, from the store's item history (store/history).

export const changesCommand = command({
  name: 'changes',
  args: '<task.crawl.yaml>',
  summary: 'what the last run (or the runs since) added, changed (field: old → new) and removed',
  options: {
    since: { type: 'string', value: 'RUN|DATE', help: 'every run after that run id, or since that date (ISO 8601)' },
    type: { type: 'string', value: 'T', help: 'only items of type T' },
    ...JSON_OPTION,
    ...STORE_OPTION,
  },
  async run(values, positionals) {
    if (positionals.length !== 1) throw new UsageError('changes takes one task file', changesCommand);
    const task = await loadTaskFile(positionals[0]!);
    const store = await openStore(values.store ?? storeUrlFor(task), { task: task.name, cwd: dirname(task.file) });
    try {
      const report = await reportSince(store, task.name, values.since, values.type);
      if (values.json)
        console.log(JSON.stringify({ runs: report.runs, changes: report.changes.map(changeRecord) }, null, 2));
      else for (const line of changeLines(task.name, report, await runNotes(store))) console.log(line);
      return EXIT.OK;
    } finally {
      await store.close();
    }
  },
});

/** The changes since a run or date; a --since that names neither is a usage error. */
async function reportSince(
  store: ItemStore,
  task: string,
  since: string | undefined,
  type: string | undefined,
): Promise<ChangeReport> {
  try {
    return await changesSince(store, task, { since, type });
  } catch (err) {
    if (since !== undefined && /--since/.test((err as Error).message)) throw new UsageError((err as Error).message);
    throw err;
  }
}

/** What each run's summary records beside its counts: its webhook delivery (run/notify.ts), whether Stop ended it. */
interface RunNote {
  readonly notify: NotifyOutcome | null;
  readonly stopped: boolean;
}

async function runNotes(store: ItemStore): Promise<Map<string, RunNote>> {
  const out = new Map<string, RunNote>();
  for (const r of await store.readRuns())
    out.set(r.run, {
      notify: (r.extra?.notify as NotifyOutcome | undefined) ?? null,
      stopped: r.extra?.stopped === true,
    });
  return out;
}

/** The human listing: per run a headline with its counts, then one line per added, changed or removed item. */
function changeLines(task: string, report: ChangeReport, notes: ReadonlyMap<string, RunNote> = new Map()): string[] {
  if (report.runs.length === 0) return [`${task}: no run has item history yet (a run records it when it finishes)`];
  const out: string[] = [];
  for (const run of report.runs) {
    out.push(runHeadline(run, notes.get(run.run)?.stopped === true));
    const sent = notes.get(run.run)?.notify;
    if (sent)
      out.push(
        `  notify: ${sent.status}${sent.attempts ? ` after ${sent.attempts} attempt${sent.attempts === 1 ? '' : 's'}` : ''}${sent.reason ? ` — ${sent.reason}` : ''}`,
      );
    const mine = report.changes.filter((c) => c.run === run.run);
    for (const [item, list] of groupByItem(mine)) out.push(...itemLines(item, list));
  }
  return out;
}

function runHeadline(r: RunChangeCounts, stopped: boolean): string {
  const when = new Date(r.finishedAt).toISOString();
  const counts = `${n(r.added)} added, ${n(r.changed)} changed, ${n(r.removed)} removed`;
  // A stopped run's changes are listed too (what it saw changed is so), but it saw only part of the site.
  if (stopped)
    return `run ${r.run} (stopped ${when}): ${counts} — stopped before its pages were done, so no item was marked removed`;
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
  if (changed.length)
    out.push(`  ~ ${item}: ${changed.map((c) => `${c.field}: ${show(c.old)} → ${show(c.new)}`).join(', ')}`);
  return out;
}

/** `export --changes`: the changes `changes` would list, as JSONL or CSV. */
export async function exportChangesOf(
  store: ItemStore,
  task: string,
  opts: { format: string; since?: string; type?: string; out: Writable; csvRaw: boolean },
): Promise<{ items: number; types: string[] }> {
  if (opts.format !== 'jsonl' && opts.format !== 'csv')
    throw new UsageError(`export --changes writes jsonl or csv, not '${opts.format}'`);
  const report = await reportSince(store, task, opts.since, opts.type);
  const items = await exportChanges(report.changes, { format: opts.format, out: opts.out, csvRaw: opts.csvRaw });
  return { items, types: [...new Set(report.changes.map((c) => c.type))] };
}

/** The run summary's line about the run's changes (storeAttachment's finalize puts them under `changes`). */
export function summaryChangeLines(
  summary: Readonly<Record<string, unknown>> | null | undefined,
  taskFile: string,
): string[] {
  const c = summary?.changes as (RunChangeCounts & { incomplete: string | null }) | undefined;
  if (!c) return [];
  const why = c.incomplete ? `; not complete (${c.incomplete}), so nothing was marked removed` : '';
  return [
    `  items changed   ${n(c.added)} added, ${n(c.changed)} changed, ${n(c.removed)} removed${why} (crawl-studio changes ${taskFile})`,
  ];
}
