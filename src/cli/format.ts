import type { CrawlStats, CrawlStatus } from '../frontier/types';
import type { CrawlTask } from '../core/task/model';
import { DROP_REASONS, droppedTotal, explainDrop } from '../core/task/dropReasons';
import { formatBytes, formatDuration, groupDigits as n } from '../core/units';
import { describeQueue, queuedJobs } from '../observe/taskStatus';
import type { TaskFigures } from '../observe/taskFigures';
import type { FailedPage, RunFailures } from '../observe/failures';

// Terminal output of the CLI: one progress line, and a summary at the end.

/** `rateLabel`: `pagesPerSec`'s name with its window (observe/taskFigures.ts), as every view names it. */
export function progressLine(
  status: CrawlStatus,
  pagesPerSec: number,
  elapsedMs: number,
  backlog = 0,
  rateLabel = 'pages/s',
): string {
  const s = status.stats;
  const c = status.counts;
  const skipped = Object.values(s?.skipped ?? {}).reduce((a, b) => a + b, 0);
  return [
    `${status.task}`,
    // Paused from anywhere (the monitor, `crawl-studio pause`, the explorer): a rate of 0 and a frozen time said why.
    // A stopped run's queue is paused too, but it is over: "paused" under "stopped" read as a run to resume.
    ...(status.run?.state === 'stopped' ? ['stopped'] : status.isPaused ? ['paused'] : []),
    `${n(s?.done ?? 0)} done`,
    ...(s?.unchanged ? [`${n(s.unchanged)} unchanged`] : []),
    `${n(s?.failed ?? 0)} failed`,
    `${n(skipped)} skipped`,
    `${n(droppedTotal(s?.dropped ?? {}))} links dropped`,
    `${n(s?.items ?? 0)} items`,
    `${pagesPerSec.toFixed(1)} ${rateLabel}`,
    // "queue N" as the editor's status bar and Queue Explorer count it (observe/taskStatus.ts).
    `queue ${n(queuedJobs(c))} (${describeQueue(c)})`,
    ...(backlog > 0 ? [`store backlog ${n(backlog)} pages`] : []),
    formatDuration(elapsedMs),
  ].join(' · ');
}

/** The ETA as `status` prints it: the time left at the recent rate, or why there is none. */
export function etaLine(f: TaskFigures): string {
  if (f.eta.seconds !== null)
    return `ETA ${formatDuration(f.eta.seconds * 1000)} (queue ${n(f.queue.total)} at ${f.rate.pagesPerSec.toFixed(1)} ${f.rate.label})`;
  return `ETA none: ${ETA_WHY[f.eta.state] ?? f.eta.state}`;
}

const ETA_WHY: Record<string, string> = {
  estimating: 'no rate yet',
  stalled: 'no page finished recently',
  drained: 'nothing left in the queue',
  'no-worker': 'no worker takes its pages',
};

/**
 * `failures` under the summary's (and `status`'s) "pages failed": each reason with its count and the first message of
 * its group, e.g. `    login: 1 — login to http://…/login failed: HTTP 403`.
 */
export function failureReasonLines(f: RunFailures | null, indent = '    '): string[] {
  return (f?.groups ?? [])
    .filter((g) => g.kind === 'failed')
    .map((g) => `${indent}${g.reason}: ${n(g.count)}${g.pages[0] ? ` — ${clip(g.pages[0].message, 160)}` : ''}`);
}

function clip(s: string, max: number): string {
  const one = s.replace(/\s+/g, ' ');
  return one.length > max ? `${one.slice(0, max - 1)}…` : one;
}

export function summaryLines(
  status: CrawlStatus,
  durationMs: number,
  extra: string[] = [],
  task?: CrawlTask,
  failures: RunFailures | null = null,
): string[] {
  const s = status.stats;
  const lines = [
    `Crawl '${status.task}' ${status.run?.state === 'stopped' ? 'stopped' : 'finished'} in ${formatDuration(durationMs)}`,
    `  pages fetched   ${n(s?.done ?? 0)}${pageKinds(s)}, ${formatBytes(s?.bytes ?? 0)}`,
    `  pages failed    ${n(s?.failed ?? 0)}${fmtGroups(s?.failures)}`,
    ...failureReasonLines(failures),
    `  pages skipped   ${n(Object.values(s?.skipped ?? {}).reduce((a, b) => a + b, 0))}${fmtGroups(s?.skipped)}`,
    `  items extracted ${n(s?.items ?? 0)}${itemNotes(s)}`,
    `  duplicate links ${n(s?.duplicates ?? 0)} (already seen, not fetched again)`,
    droppedLine(s),
  ];
  return [...lines, ...extra, ...(s && task ? dropWarnings(s, task) : []), ...(s ? pageWarnings(s) : [])];
}

/** " (3 not HTML, 1 sitemaps, 40 unchanged: 304)": what the fetched pages were, when not all plain pages. */
function pageKinds(s: CrawlStats | null): string {
  const kinds = [
    s?.nonHtml ? `${n(s.nonHtml)} not HTML` : '',
    s?.sitemaps ? `${n(s.sitemaps)} sitemaps` : '',
    s?.unchanged ? `${n(s.unchanged)} unchanged: 304` : '',
  ].filter(Boolean);
  return kinds.length ? ` (${kinds.join(', ')})` : '';
}

/** " (2 item problems, 120 more kept from unchanged pages)". */
function itemNotes(s: CrawlStats | null): string {
  const notes = [
    s?.problems ? `${n(s.problems)} item problems` : '',
    s?.unchanged ? `${n(s.unchangedItems)} more kept from unchanged pages` : '',
  ].filter(Boolean);
  return notes.length ? ` (${notes.join(', ')})` : '';
}

/**
 * "  links dropped   11 (pattern: 11)": the total and its reasons, which add up to it. `repeat` (the same URL again on
 * one page, kept once) is not a drop of a link and not in the total, so it is said after the parentheses.
 */
export function droppedLine(s: CrawlStats | null): string {
  const { repeat = 0, ...dropped } = s?.dropped ?? {};
  const repeats =
    repeat > 0 ? `; ${n(repeat)} repeat${repeat === 1 ? '' : 's'} (the same URL again on a page, kept once)` : '';
  return `  links dropped   ${n(droppedTotal(dropped))}${fmtGroups(dropped)}${repeats}`;
}

/**
 * "  items stored    book: 20 rows written by this run (inserted or updated), …": the rows whose last write was this
 * run's, per type, not the table (a run that stored nothing printed an earlier run's 30 rows).
 */
export function storedLine(
  runRows: ReadonlyArray<{ readonly type: string; readonly count: number }>,
  tableRows: ReadonlyArray<{ readonly type: string; readonly count: number }>,
  notes: string,
): string {
  const mine = runRows.filter((r) => r.count > 0);
  if (mine.length > 0)
    return `  items stored    ${mine.map((r) => `${r.type}: ${n(r.count)}`).join(', ')} rows written by this run (inserted or updated; ${notes})`;
  const held = tableRows.filter((r) => r.count > 0);
  return `  items stored    none by this run (${notes})${held.length ? `; the store holds ${held.map((r) => `${r.type}: ${n(r.count)}`).join(', ')} rows from earlier runs` : ''}`;
}

/** Drop reasons present in a run, each with what its label means (for `status`). */
export function droppedReasonLines(s: CrawlStats | null): string[] {
  return Object.entries(s?.dropped ?? {})
    .filter(([, v]) => v > 0)
    .map(([r, v]) => `    ${r.padEnd(14)}${n(v).padStart(8)}  ${DROP_REASONS[r] ?? ''}`.trimEnd());
}

/**
 * A warning for each rule whose pages lost most of their links, naming the main reason in the task file's terms: a
 * scope or match that excludes everything ends a crawl after one page with exit 0, and this is the only hint.
 */
export function dropWarnings(s: CrawlStats, task: CrawlTask): string[] {
  const out: string[] = [];
  for (const [rule, t] of Object.entries(s.byRule ?? {})) {
    const dropped = droppedTotal(t.dropped);
    if (t.links === 0 || dropped * 2 <= t.links) continue;
    const [reason, count] = Object.entries(t.dropped)
      .filter(([r]) => r !== 'repeat')
      .sort((a, b) => b[1] - a[1])[0]!;
    out.push(
      `  warning: rule ${rule}: ${n(dropped)} of ${n(t.links)} links dropped (${reason}${count < dropped ? ` ${n(count)}` : ''}: ${explainDrop(task, rule, reason)})`,
    );
  }
  return out;
}

/**
 * Warnings about pages that were read, but likely wrongly: a Content-Type charset that garbled the text (per host),
 * a rendered rule read at `load` whose cards kept coming after it (per rule). Nothing failed, so nothing else says.
 */
export function pageWarnings(s: CrawlStats): string[] {
  const out: string[] = [];
  for (const c of s.charsetConflicts ?? []) {
    out.push(
      `  warning: host ${c.host}: ${n(c.pages)} page${c.pages === 1 ? '' : 's'} say charset ${c.header} in Content-Type but ${c.meta} in <meta charset>; read as ${c.header} (the header wins), their text looks garbled (mojibake such as "CrÃ¨me"): the server's header is likely wrong`,
    );
  }
  for (const [rule, l] of Object.entries(s.lateContent ?? {})) {
    out.push(
      `  warning: rule ${rule}: on ${n(l.pages)} rendered page${l.pages === 1 ? '' : 's'} links and items arrived after load (${n(l.atLoad)} matches when read, ${n(l.later)} a moment later): cards arrived after load, some were missed; use waitFor: { selector: ... } or waitFor: networkidle`,
    );
  }
  return out;
}

function fmtGroups(g: Readonly<Record<string, number>> | undefined): string {
  const entries = Object.entries(g ?? {}).filter(([, v]) => v > 0);
  return entries.length ? ` (${entries.map(([k, v]) => `${k}: ${n(v)}`).join(', ')})` : '';
}

/** `crawl-studio failures`: each reason with its count, then its pages with what is known of each. */
export function failuresReport(f: RunFailures): string[] {
  if (!f.run) return [`${f.task}: never run on this Redis`];
  const lines = [
    `${f.task}: run ${f.run}: ${n(f.failed)} page${f.failed === 1 ? '' : 's'} failed, ${n(f.skipped)} skipped`,
  ];
  for (const g of f.groups) {
    lines.push(
      '',
      `${g.kind} ${g.reason}: ${n(g.count)}${g.pages.length < g.count ? ` (${g.pages.length ? `the latest ${n(g.pages.length)}` : 'their pages are no longer kept'})` : ''}`,
    );
    for (const p of g.pages) lines.push(...pageLines(p));
  }
  return lines;
}

function pageLines(p: FailedPage): string[] {
  const facts = [
    p.rule && `rule ${p.rule}`,
    p.status !== null && `HTTP ${p.status}`,
    p.attempts !== null && `${p.attempts} attempt${p.attempts === 1 ? '' : 's'}`,
    p.worker && `worker ${p.worker}`,
    p.at !== null && new Date(p.at).toISOString(),
  ].filter(Boolean);
  return [
    `  ${p.url}`,
    `    ${facts.join(' · ')}`,
    ...(p.message && p.message !== p.reason ? [`    ${clip(p.message, 300)}`] : []),
  ];
}
