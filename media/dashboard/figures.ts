// What the dashboard writes about a snapshot, as text: pure functions (test/unit/webviewTexts.test.ts).

import type { DashboardData } from '../../src/extension/dashboard/protocol';
import { fmtDuration } from '../shared/format';

/** The ETA counter: its value and its detail line. */
export function etaText(d: DashboardData): [string, string] {
  const e = d.eta;
  const rates = `done ${e.completionRate.toFixed(1)}/s · found ${e.discoveryRate.toFixed(1)}/s`;
  switch (e.state) {
    case 'finished':
      return ['done', d.run?.finishedAt ? `finished ${new Date(d.run.finishedAt).toLocaleTimeString()}` : 'finished'];
    case 'stopped':
      return [
        'stopped',
        d.run?.finishedAt
          ? `stopped ${new Date(d.run.finishedAt).toLocaleTimeString()}: Start Crawl begins a new run`
          : 'stopped',
      ];
    case 'no-worker':
      return ['no worker', `${d.queue.total} in the queue and no worker running: Start Crawl resumes the run`];
    case 'paused':
      return ['paused', 'the queue is paused: Resume Queue in the Queue Explorer'];
    case 'interrupted':
      return ['interrupted', d.run?.phase ?? 'no process drives the run: Start Crawl resumes it'];
    case 'drained':
      return ['drained', 'nothing left in the queue'];
    case 'ok':
      return [fmtDuration((e.seconds ?? 0) * 1000), rates];
    case 'stalled':
      return ['stalled', 'no page finished recently — are workers running?'];
    default:
      return ['…', 'estimating from the first seconds'];
  }
}

/** The codicon of a counter, by its label. */
export function counterIcon(label: string): string {
  switch (label) {
    case 'Failed':
      return 'error';
    case 'Skipped':
      return 'debug-step-over';
    case 'Items':
      return 'database';
    case 'Discovered':
      return 'search';
    case 'Downloaded':
      return 'cloud-download';
    case 'Links dropped':
      return 'filter';
    default:
      return 'check';
  }
}

/** Path and query: the host is the same for most URLs of a crawl (the full URL is in the tooltip). */
export function shortUrl(u: string): string {
  try {
    const x = new URL(u);
    return `${x.pathname}${x.search}`;
  } catch {
    return u;
  }
}
