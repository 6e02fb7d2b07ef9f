import { dirname } from 'node:path';
import type { CrawlTask } from '../../core/task/model';
import { storeUrlFor } from '../../run/storeAttachment';
import { openStore, runChangeCounts } from '../../store';
import type { RunChanges } from './protocol';

// A finished run's item changes for the dashboard (issue 33): the counts its history closed with, read by the
// function the CLI's `changes`, the Results view and the monitor read them with (store/history/query.ts), and the
// outcome of its notification as the run recorded it (run/notify.ts: extra.notify of its summary in the store).

export async function readRunChanges(task: CrawlTask, run: string): Promise<RunChanges | null> {
  const store = await openStore(storeUrlFor(task), { task: task.name, cwd: dirname(task.file) });
  try {
    const counts = await runChangeCounts(store, task.name, run);
    if (!counts) return null;
    const extra = (await store.readRuns()).find((r) => r.run === run)?.extra;
    return {
      run,
      added: counts.added,
      changed: counts.changed,
      removed: counts.removed,
      complete: counts.complete,
      notify: notifyOutcome(extra?.notify),
    };
  } finally {
    await store.close();
  }
}

function notifyOutcome(v: unknown): RunChanges['notify'] {
  if (typeof v !== 'object' || v === null) return null;
  const o = v as { status?: unknown; attempts?: unknown; reason?: unknown };
  if (o.status !== 'delivered' && o.status !== 'failed' && o.status !== 'skipped') return null;
  return {
    status: o.status,
    attempts: Number(o.attempts ?? 0),
    ...(typeof o.reason === 'string' ? { reason: o.reason } : {}),
  };
}
