import { existsSync } from 'node:fs';
import { dirname } from 'node:path';
import type { RulePage } from '../../core/designer/pageChoice';
import type { CrawlTask } from '../../core/task/model';
import { openStore, resolveStoreUrl, storeUrlOf } from '../../store/open';

// Pages of the task's last run, with the rule that handled each, for the Preview lens (issue 32, item 6): read from
// the items the store keeps (each row says its page and rule), newest first. A store that does not exist yet is not
// created, and one that does not answer within a few seconds gives nothing: the lens looks elsewhere.

const PER_TYPE = 200;
const TIMEOUT_MS = 3_000;

export async function runPagesOf(task: CrawlTask): Promise<RulePage[]> {
  let url: string;
  try {
    url = storeUrlOf(task);
    const target = resolveStoreUrl(url, { task: task.name, cwd: dirname(task.file) });
    if (target.kind === 'sqlite' && !existsSync(target.path)) return [];
  } catch {
    return [];
  }
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<RulePage[]>((resolve) => (timer = setTimeout(() => resolve([]), TIMEOUT_MS)));
  try {
    return await Promise.race([read(url, task), late]);
  } catch {
    return [];
  } finally {
    clearTimeout(timer);
  }
}

async function read(url: string, task: CrawlTask): Promise<RulePage[]> {
  const store = await openStore(url, { task: task.name, cwd: dirname(task.file) });
  try {
    const runs = await store.readRuns();
    const last = [...runs].sort((a, b) => b.finishedAt - a.finishedAt)[0]?.run ?? null;
    const mine: RulePage[] = [];
    const older: RulePage[] = [];
    for (const type of await store.itemTypes()) {
      for (const item of await store.readItems(type, { limit: PER_TYPE, descending: true })) {
        if (!item.url || !item.rule) continue;
        // The last finished run's pages first; a run still going (no summary yet) or an older one's after them.
        (last !== null && item.run === last ? mine : older).push({ url: item.url, rule: item.rule });
      }
    }
    return [...mine, ...older];
  } finally {
    await store.close();
  }
}
