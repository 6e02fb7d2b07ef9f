import * as vscode from 'vscode';
import { dirname } from 'node:path';
import type { CrawlTask } from '../../core/task/model';
import { TaskPartitions } from '../../frontier/partitions';
import { findUrl, type UrlFinding, type UrlSearchResult } from '../../observe/findUrl';
import { jobDocument, readJobRecord, readPageJob, type JobRecord } from '../../observe/jobs';
import { openStore, type ItemStore } from '../../store';
import { ItemView } from '../../store/query';
import { storeUrlFor } from '../../run/storeAttachment';
import type { RedisConnection } from '../redisConnection';
import { showJsonDocument } from '../jsonDocuments';

// Jobs seen from the results side: "Show Job" for a stored row and "Find URL" across the queue, the seen set,
// failed jobs and the store, through the read-models (observe/jobs.ts, observe/findUrl.ts) over every partition of
// the task, on the extension's Redis connection.

async function withParts<T>(
  connection: RedisConnection,
  task: string,
  fn: (parts: TaskPartitions) => Promise<T>,
): Promise<T> {
  const parts = new TaskPartitions(await connection.get(), task);
  try {
    return await fn(parts);
  } finally {
    await parts.close();
  }
}

/** Items whose source URL is exactly `url`, over every item type (a scan: the stores have no URL index). */
async function storedItemsAt(store: ItemStore, url: string): Promise<{ type: string; key: string }[]> {
  const out: { type: string; key: string }[] = [];
  for (const type of await store.itemTypes()) {
    const view = new ItemView(store, { type, filters: [{ field: '_url', text: `=${url}` }], sort: null });
    const n = await view.count();
    for (const item of await view.page(0, Math.min(n, 50))) out.push({ type, key: item.key });
  }
  return out;
}

export async function searchUrl(connection: RedisConnection, task: CrawlTask, url: string): Promise<UrlSearchResult> {
  const store = await openStore(storeUrlFor(task), { task: task.name, cwd: dirname(task.file) });
  try {
    return await withParts(connection, task.name, (parts) => findUrl(parts, task, url, (u) => storedItemsAt(store, u)));
  } finally {
    await store.close();
  }
}

function jobJson(connection: RedisConnection, task: string, jobId: string): Promise<JobRecord | null> {
  return withParts(connection, task, (parts) => readJobRecord(parts, jobId));
}

async function showJob(job: JobRecord): Promise<void> {
  const title = job.id !== undefined ? `${job.queue} job ${job.id}` : `where ${job.data.url} stands`;
  await showJsonDocument(title, jobDocument(job), vscode.ViewColumn.Beside);
}

/** The job that fetched a stored row's page; when the queue no longer keeps it, where the URL stands instead. */
export async function showJobFor(
  connection: RedisConnection,
  task: CrawlTask,
  url: string,
  run: string | null,
): Promise<void> {
  const job = run ? await withParts(connection, task.name, (parts) => readPageJob(parts, run, url)) : null;
  if (job) return showJob(job);
  const r = await searchUrl(connection, task, url);
  await showFindings(connection, task, r, `The job of ${url} is no longer kept by the queue`);
}

const ICONS: Record<UrlFinding['place'], string> = {
  scope: 'filter',
  run: 'info',
  seen: 'eye',
  queue: 'list-unordered',
  failed: 'error',
  store: 'database',
};

/** Lists findings; picking one opens what it names (the job's data, the item in the results view). */
export async function showFindings(
  connection: RedisConnection,
  task: CrawlTask,
  r: UrlSearchResult,
  title?: string,
): Promise<void> {
  type Pick = vscode.QuickPickItem & { finding: UrlFinding };
  const picks: Pick[] = r.findings.map((f) => ({
    label: `$(${ICONS[f.place]}) ${f.place}`,
    description: f.text,
    finding: f,
  }));
  const chosen = await vscode.window.showQuickPick(picks, {
    title: title ?? `${r.url ?? r.input} in '${task.name}'`,
    placeHolder: r.url ?? r.input,
    matchOnDescription: true,
  });
  if (!chosen) return;
  const f = chosen.finding;
  if (f.jobId) {
    const job = await jobJson(connection, task.name, f.jobId);
    if (job) await showJob(job);
  } else if (f.itemType && f.itemKey) {
    await vscode.commands.executeCommand('crawlStudio.openResults', vscode.Uri.file(task.file), {
      itemType: f.itemType,
      filters: { _key: `=${f.itemKey}` },
    });
  }
}
