import type { CrawlTask } from '../../core/task/model';
import type { CrawlStats } from '../../frontier/crawl';
import { finishedPages } from '../../observe/figures';

// What the editor says when a crawl ends. Its figures are the run's counters, as the Queue Explorer's groups and the
// dashboard show them (observe/figures.ts), and a limit that cut the crawl is named with the setting to change: a
// new user's 10-page pagination stopped at page 4 by `maxDepth: 3` looked like a finished crawl (issue 23, item 8).

export function crawlFinishedMessage(task: Pick<CrawlTask, 'name' | 'scope'>, stats: CrawlStats | null): string {
  const f = finishedPages(stats);
  const items = stats?.items ?? 0;
  const parts = [`${f.done} page${f.done === 1 ? '' : 's'}`, `${items} item${items === 1 ? '' : 's'}`];
  if (f.skipped) parts.push(`${f.skipped} skipped`);
  parts.push(`${f.failed} failed`);
  const cuts = limitsThatCut(task, stats);
  return `Crawl '${task.name}' finished: ${parts.join(', ')}.${cuts.length ? ` ${cuts.join(' ')}` : ''}`;
}

/** One sentence per limit that left pages out, naming the setting: empty when the crawl ran out of links by itself. */
export function limitsThatCut(task: Pick<CrawlTask, 'scope'>, stats: CrawlStats | null): string[] {
  if (!stats) return [];
  const out: string[] = [];
  const overPages = stats.skipped.limit ?? 0;
  if (overPages > 0) out.push(`scope.maxPages (${task.scope.maxPages}) stopped it: ${overPages} more link${overPages === 1 ? '' : 's'} were not crawled.`);
  const tooDeep = stats.dropped.depth ?? 0;
  if (tooDeep > 0) out.push(`scope.maxDepth (${task.scope.maxDepth}) cut it: ${tooDeep} link${tooDeep === 1 ? ' was' : 's were'} deeper.`);
  return out;
}
