import type { CrawlStatus } from '../frontier/crawl';
import { formatBytes, formatDuration, groupDigits as n } from '../core/units';

// Terminal output of the CLI: one progress line, and a summary at the end.

export function progressLine(status: CrawlStatus, pagesPerSec: number, elapsedMs: number, backlog = 0): string {
  const s = status.stats;
  const c = status.counts;
  const queued = c.waiting + c.prioritized + c.delayed;
  const skipped = Object.values(s?.skipped ?? {}).reduce((a, b) => a + b, 0);
  return [
    `${status.task}`,
    `${n(s?.done ?? 0)} done`,
    `${n(s?.failed ?? 0)} failed`,
    `${n(skipped)} skipped`,
    `${n(s?.items ?? 0)} items`,
    `${pagesPerSec.toFixed(1)} pages/s`,
    `queue ${n(queued)} (active ${n(c.active)})`,
    ...(backlog > 0 ? [`store backlog ${n(backlog)} pages`] : []),
    formatDuration(elapsedMs),
  ].join(' · ');
}

export function summaryLines(status: CrawlStatus, durationMs: number, extra: string[] = []): string[] {
  const s = status.stats;
  const lines = [
    `Crawl '${status.task}' finished in ${formatDuration(durationMs)}`,
    `  pages fetched   ${n(s?.done ?? 0)}${s?.nonHtml || s?.sitemaps ? ` (${[s.nonHtml ? `${n(s.nonHtml)} not HTML` : '', s.sitemaps ? `${n(s.sitemaps)} sitemaps` : ''].filter(Boolean).join(', ')})` : ''}, ${formatBytes(s?.bytes ?? 0)}`,
    `  pages failed    ${n(s?.failed ?? 0)}${fmtGroups(s?.failures)}`,
    `  pages skipped   ${n(Object.values(s?.skipped ?? {}).reduce((a, b) => a + b, 0))}${fmtGroups(s?.skipped)}`,
    `  items extracted ${n(s?.items ?? 0)}${s?.problems ? ` (${n(s.problems)} item problems)` : ''}`,
    `  duplicate links ${n(s?.duplicates ?? 0)} (already seen, not fetched again)`,
  ];
  return [...lines, ...extra];
}

function fmtGroups(g: Readonly<Record<string, number>> | undefined): string {
  const entries = Object.entries(g ?? {}).filter(([, v]) => v > 0);
  return entries.length ? ` (${entries.map(([k, v]) => `${k}: ${n(v)}`).join(', ')})` : '';
}
