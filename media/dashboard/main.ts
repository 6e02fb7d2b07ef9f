import '@vscode-elements/elements/dist/vscode-button/index.js';
import uplotCss from 'uplot/dist/uPlot.min.css';
import type { DashboardData, ToDashboard } from '../../src/extension/dashboard/protocol';
import { addStyle, h, renderChanged } from '../shared/dom';
import { createCharts } from './charts';
import { renderHosts, renderWorkers } from './fleet';
import { renderGroups, type GroupsShown } from './groups';
import { send, vscode } from './host';
import { createHeader, renderChanges, renderKpis } from './summary';
import css from './style.css';

// The crawl dashboard: counters, two uPlot charts (throughput, queue depth) over the run's metric history,
// failures by cause with "Retry all", skips, hosts and workers. The extension posts a full snapshot every
// second while the panel is visible; this page only renders it, and only the parts that changed (renderChanged).

addStyle(uplotCss);
addStyle(css);

const app = document.getElementById('app')!;
const header = createHeader();
const errorEl = h('div', { class: 'error', role: 'alert', hidden: true });
// A finished run's item changes (issue 33) and its notification's outcome.
const changesEl = h('div', { class: 'changes', role: 'status', hidden: true });
const kpisEl = h('div', { class: 'kpis', role: 'group', 'aria-label': 'Counters' });
const charts = createCharts();
const failuresEl = h('section', { 'aria-label': 'Failures by cause' });
const skippedEl = h('section', { 'aria-label': 'Skipped pages' });
const hostsEl = h('section', { 'aria-label': 'Hosts' });
const workersEl = h('section', { 'aria-label': 'Workers' });
app.append(header.el, errorEl, changesEl, kpisEl, charts.el, failuresEl, skippedEl, hostsEl, workersEl);

/** The outcome of the last Retry all, shown over the failures for a few seconds. */
let toast = '';
let last: DashboardData | null = null;

function render(d: DashboardData): void {
  last = d;
  vscode.setState({ file: d.file });
  // Keep focus on a button that is re-rendered (Retry all) so keyboard users do not lose their place.
  const focusGroup = (document.activeElement as HTMLElement | null)?.dataset?.group;
  header.render(d);
  renderChanges(changesEl, d);
  renderKpis(kpisEl, d);
  charts.render(d);
  const screenshots = d.screenshots ?? [];
  const failures: GroupsShown = {
    title: 'Failures by cause',
    icon: 'error',
    rows: d.failures,
    retry: true,
    // A stopped run is over for good: a retry would reopen it, and the engine refuses it (frontier/refused.ts).
    retryRefused: d.run?.state === 'stopped' ? 'The run was stopped: Start Crawl begins a new run' : null,
    hint: 'final failures, with the failed jobs the queue keeps',
    screenshots,
    toast,
  };
  renderChanged(failuresEl, failures, () => renderGroups(failuresEl, failures));
  const skipped: GroupsShown = {
    title: 'Skipped',
    icon: 'debug-step-over',
    rows: d.skipped,
    retry: false,
    retryRefused: null,
    hint: 'pages not fetched, by reason',
    screenshots,
    toast,
  };
  renderChanged(skippedEl, skipped, () => renderGroups(skippedEl, skipped));
  renderChanged(hostsEl, d.hosts, () => renderHosts(hostsEl, d));
  renderChanged(workersEl, [d.workers, d.rateWindow], () => renderWorkers(workersEl, d));
  if (focusGroup) failuresEl.querySelector<HTMLElement>(`[data-group="${CSS.escape(focusGroup)}"]`)?.focus();
}

window.addEventListener('message', (e: MessageEvent<ToDashboard>) => {
  const m = e.data;
  if (m.type === 'data') {
    errorEl.hidden = true;
    render(m.data);
  } else if (m.type === 'retried') {
    const label = last?.failures.find((g) => g.group === m.group)?.label ?? m.group;
    toast = `${m.count} failed job(s) of ${label} sent back to the queue`;
    setTimeout(() => (toast = ''), 6000);
    if (last) render(last);
  } else if (m.type === 'error') {
    errorEl.hidden = false;
    errorEl.textContent = m.message;
  }
});

send({ type: 'ready' });
