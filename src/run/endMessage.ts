import type { CrawlTask } from '../core/task/model';
import type { CrawlStats } from '../frontier/types';
import { finishedPages } from '../observe/figures';
import { droppedPhrase } from '../core/task/dropReasons';
import type { RunOutcome } from './session';

// What a front end says when a crawl ends (the editor's notification and run task; meant for the CLI's `run` too,
// so the words are the same wherever the user looks). Its figures are the run's counters, as the Queue Explorer's groups and the
// dashboard show them (observe/figures.ts), and a limit that cut the crawl is named with the setting to change: a
// new user's 10-page pagination stopped at page 4 by `maxDepth: 3` looked like a finished crawl (issue 23, item 8).

export function crawlFinishedMessage(task: Pick<CrawlTask, 'name' | 'scope'>, stats: CrawlStats | null): string {
  const cuts = limitsThatCut(task, stats);
  return `Crawl '${task.name}' finished: ${figures(stats)}.${cuts.length ? ` ${cuts.join(' ')}` : ''}`;
}

/**
 * The one message for how a crawl ended (issue 32: a Stop showed "stopped…" and "finished: 90 pages…" at once):
 * finished, stopped (Stop Crawl ended the run: Start begins a new one) or interrupted (left to resume).
 */
export function crawlEndMessage(
  task: Pick<CrawlTask, 'name' | 'scope'>,
  result: { readonly outcome: RunOutcome; readonly status: { readonly stats: CrawlStats | null } },
): string {
  const stats = result.status.stats;
  switch (result.outcome) {
    case 'finished':
      return crawlFinishedMessage(task, stats);
    case 'stopped':
      return crawlStoppedMessage(task.name, stats);
    case 'interrupted':
      return `Crawl '${task.name}' interrupted: ${figures(stats)}. Start Crawl resumes it where it left off.`;
  }
}

/** A run ended with Stop: by the window that drove it, or by any window once nobody drives it (a reload). */
export function crawlStoppedMessage(task: string, stats: CrawlStats | null): string {
  return `Crawl '${task}' stopped: ${figures(stats)}. Start Crawl begins a new run from the start URLs.`;
}

function figures(stats: CrawlStats | null): string {
  const f = finishedPages(stats);
  const items = stats?.items ?? 0;
  const parts = [`${f.done} page${f.done === 1 ? '' : 's'}`, `${items} item${items === 1 ? '' : 's'}`];
  if (f.skipped) parts.push(`${f.skipped} skipped`);
  parts.push(`${f.failed} failed`);
  const dropped = droppedPhrase(stats?.dropped ?? {});
  if (dropped) parts.push(dropped);
  return parts.join(', ');
}

/** One sentence per limit that left pages out, naming the setting: empty when the crawl ran out of links by itself. */
function limitsThatCut(task: Pick<CrawlTask, 'scope'>, stats: CrawlStats | null): string[] {
  if (!stats) return [];
  const out: string[] = [];
  const overPages = stats.skipped.limit ?? 0;
  if (overPages > 0)
    out.push(
      `scope.maxPages (${task.scope.maxPages}) stopped it: ${overPages} more link${overPages === 1 ? '' : 's'} were not crawled.`,
    );
  const tooDeep = stats.dropped.depth ?? 0;
  if (tooDeep > 0)
    out.push(
      `scope.maxDepth (${task.scope.maxDepth}) cut it: ${tooDeep} link${tooDeep === 1 ? ' was' : 's were'} deeper.`,
    );
  return out;
}
