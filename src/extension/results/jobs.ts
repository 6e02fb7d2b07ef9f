import * as vscode from 'vscode';
import { Job, Queue } from 'bullmq';
import { dirname } from 'node:path';
import type { CrawlTask } from '../../core/task/model';
import { fingerprintHex } from '../../core/url/fingerprint';
import type { PageJobData, PageJobResult } from '../../frontier/crawl';
import { findUrl, type UrlFinding, type UrlSearchResult } from '../../observe/findUrl';
import { bullPrefix } from '../../frontier/keys';
import { openStore, type ItemStore } from '../../store';
import { ItemView } from '../../store/query';
import { storeUrlFor } from '../../run/storeAttachment';
import type { RedisConnection } from '../redisConnection';
import { showJsonDocument } from '../jsonDocuments';

// Jobs seen from the results side: "Show Job" for a stored row and "Find URL" across the queue, the seen set,
// failed jobs and the store. Both use a short-lived BullMQ Queue on the extension's Redis connection.

async function withQueue<T>(connection: RedisConnection, task: string, fn: (q: Queue<PageJobData, PageJobResult>) => Promise<T>): Promise<T> {
  const redis = await connection.get();
  const q = new Queue<PageJobData, PageJobResult>(task, { connection: redis, prefix: bullPrefix(task) });
  q.on('error', () => undefined);
  try {
    return await fn(q);
  } finally {
    await q.close();
  }
}

/** Items whose source URL is exactly `url`, over every item type (a scan: the stores have no URL index). */
export async function storedItemsAt(store: ItemStore, url: string): Promise<{ type: string; key: string }[]> {
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
    const redis = await connection.get();
    return await withQueue(connection, task.name, (q) => findUrl(redis, q, task, url, (u) => storedItemsAt(store, u)));
  } finally {
    await store.close();
  }
}

export async function jobJson(connection: RedisConnection, task: string, jobId: string): Promise<Record<string, unknown> | null> {
  return withQueue(connection, task, async (q) => {
    const j = (await Job.fromId(q, jobId)) as Job<PageJobData, PageJobResult> | undefined;
    if (!j) return null;
    return { id: j.id, queue: task, state: await j.getState(), data: j.data, attemptsMade: j.attemptsMade, failedReason: j.failedReason, stacktrace: j.stacktrace, returnvalue: j.returnvalue, timestamp: j.timestamp, processedOn: j.processedOn, finishedOn: j.finishedOn };
  });
}

async function showJson(content: unknown): Promise<void> {
  const c = content as { queue?: unknown; id?: unknown; url?: unknown };
  const title = c.id !== undefined ? `${String(c.queue ?? 'job')} job ${String(c.id)}` : `where ${String(c.url ?? 'the URL')} stands`;
  await showJsonDocument(title, content, vscode.ViewColumn.Beside);
}

/** The job that fetched a stored row's page; when the queue no longer keeps it, where the URL stands instead. */
export async function showJobFor(connection: RedisConnection, task: CrawlTask, url: string, run: string | null): Promise<void> {
  const job = run ? await jobJson(connection, task.name, `${run}.${fingerprintHex(url)}`) : null;
  if (job) return showJson(job);
  const r = await searchUrl(connection, task, url);
  await showFindings(connection, task, r, `The job of ${url} is no longer kept by the queue`);
}

const ICONS: Record<UrlFinding['place'], string> = { scope: 'filter', run: 'info', seen: 'eye', queue: 'list-unordered', failed: 'error', store: 'database' };

/** Lists findings; picking one opens what it names (the job's data, the item in the results view). */
export async function showFindings(connection: RedisConnection, task: CrawlTask, r: UrlSearchResult, title?: string): Promise<void> {
  type Pick = vscode.QuickPickItem & { finding: UrlFinding };
  const picks: Pick[] = r.findings.map((f) => ({ label: `$(${ICONS[f.place]}) ${f.place}`, description: f.text, finding: f }));
  const chosen = await vscode.window.showQuickPick(picks, { title: title ?? `${r.url ?? r.input} in '${task.name}'`, placeHolder: r.url ?? r.input, matchOnDescription: true });
  if (!chosen) return;
  const f = chosen.finding;
  if (f.jobId) {
    const job = await jobJson(connection, task.name, f.jobId);
    if (job) await showJson(job);
  } else if (f.itemType && f.itemKey) {
    await vscode.commands.executeCommand('crawlStudio.openResults', vscode.Uri.file(task.file), { itemType: f.itemType, filters: { _key: `=${f.itemKey}` } });
  }
}
