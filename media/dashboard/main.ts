import '@vscode-elements/elements/dist/vscode-button/index.js';
import uPlot from 'uplot';
import uplotCss from 'uplot/dist/uPlot.min.css';
import type { DashboardData, FromDashboard, GroupRow, ToDashboard } from '../../src/extension/dashboard/protocol';
import { addStyle, h, icon } from '../shared/dom';
import { fmtBytes, fmtDuration, fmtInt } from '../shared/format';
import css from './style.css';

// The crawl dashboard: counters, two uPlot charts (throughput, queue depth) over the run's metric history,
// failures by cause with "Retry all", skips, hosts and workers. The extension posts a full snapshot every
// second while the panel is visible; this page only renders it.

addStyle(uplotCss);
addStyle(css);
const vscode = acquireVsCodeApi<{ file: string }>();
const send = (m: FromDashboard) => vscode.postMessage(m);

const app = document.getElementById('app')!;
const headerEl = h('header', {});
const errorEl = h('div', { class: 'error', role: 'alert', hidden: true });
// A finished run's item changes (issue 33) and its notification's outcome.
const changesEl = h('div', { class: 'changes', role: 'status', hidden: true });
const kpisEl = h('div', { class: 'kpis', role: 'group', 'aria-label': 'Counters' });
const throughput = chartBox('Throughput', 'pages/s and items/s over time');
const depth = chartBox('Queue depth', 'jobs waiting, active or delayed, and new URLs discovered per second');
const chartsEl = h('div', { class: 'charts' }, throughput.box, depth.box);
const failuresEl = h('section', { 'aria-label': 'Failures by cause' });
const skippedEl = h('section', { 'aria-label': 'Skipped pages' });
const hostsEl = h('section', { 'aria-label': 'Hosts' });
const workersEl = h('section', { 'aria-label': 'Workers' });
app.append(headerEl, errorEl, changesEl, kpisEl, chartsEl, failuresEl, skippedEl, hostsEl, workersEl);

function chartBox(title: string, label: string): { box: HTMLElement; plot: HTMLElement } {
  const plot = h('div', { class: 'plot', role: 'img', 'aria-label': label });
  return { box: h('div', { class: 'chart' }, h('h2', {}, title), plot), plot };
}

function cssVar(name: string, fallback: string): string {
  return getComputedStyle(document.body).getPropertyValue(name).trim() || fallback;
}

let plots: { a: uPlot; b: uPlot } | null = null;

function axes(yLabel: string): uPlot.Axis[] {
  const fg = cssVar('--vscode-descriptionForeground', '#888');
  const grid = cssVar('--vscode-editorGroup-border', 'rgba(128,128,128,.2)');
  const font = `11px ${cssVar('--vscode-font-family', 'sans-serif')}`;
  // Axis labels overlapped (issue 32, item 7): time ticks were allowed 50 px apart, narrower than "10:00:00", and
  // the y axis was 50 px wide whatever its values ("12,345" ran into its label). Ticks now keep room for their text
  // and the y axis is as wide as its widest value plus its label.
  const measure = document.createElement('canvas').getContext('2d');
  if (measure) measure.font = font;
  const width = (text: string) => (measure ? measure.measureText(text).width : text.length * 7);
  return [
    { stroke: fg, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid, width: 1 }, font, space: 90 },
    {
      stroke: fg,
      grid: { stroke: grid, width: 1 },
      ticks: { stroke: grid, width: 1 },
      font,
      label: yLabel,
      labelFont: font,
      labelSize: 18,
      space: 30,
      size: (_u, values) => Math.ceil(Math.max(24, ...(values ?? []).map((v) => width(String(v))))) + 10 + 18,
    },
  ];
}

function makePlots(): { a: uPlot; b: uPlot } {
  const blue = cssVar('--vscode-charts-blue', '#3794ff');
  const green = cssVar('--vscode-charts-green', '#89d185');
  const orange = cssVar('--vscode-charts-orange', '#d18616');
  const purple = cssVar('--vscode-charts-purple', '#b180d7');
  const size = (el: HTMLElement) => ({ width: Math.max(200, el.clientWidth), height: 200 });
  const fmt = (v: number | null) => (v === null ? '–' : v >= 100 ? fmtInt(v) : v.toFixed(1));
  const a = new uPlot(
    {
      ...size(throughput.plot),
      cursor: { drag: { x: false, y: false } },
      scales: { x: { time: true }, y: { range: (_u, _min, max) => [0, Math.max(1, max * 1.1)] } },
      axes: axes('per second'),
      series: [
        {},
        { label: 'pages/s', stroke: blue, width: 2, fill: blue + '22', value: (_u, v) => fmt(v) },
        { label: 'items/s', stroke: green, width: 2, value: (_u, v) => fmt(v) },
      ],
    },
    [[], [], []],
    throughput.plot,
  );
  const b = new uPlot(
    {
      ...size(depth.plot),
      cursor: { drag: { x: false, y: false } },
      scales: {
        x: { time: true },
        y: { range: (_u, _min, max) => [0, Math.max(1, max * 1.1)] },
        r: { range: (_u, _min, max) => [0, Math.max(1, max * 1.1)] },
      },
      axes: [
        ...axes('jobs'),
        {
          side: 1,
          scale: 'r',
          stroke: cssVar('--vscode-descriptionForeground', '#888'),
          grid: { show: false },
          size: 50,
          font: `11px ${cssVar('--vscode-font-family', 'sans-serif')}`,
        },
      ],
      series: [
        {},
        { label: 'queue depth', stroke: orange, width: 2, fill: orange + '33', value: (_u, v) => fmt(v) },
        { label: 'discovered/s', stroke: purple, width: 1.5, scale: 'r', dash: [4, 3], value: (_u, v) => fmt(v) },
      ],
    },
    [[], [], []],
    depth.plot,
  );
  new ResizeObserver(() => {
    a.setSize(size(throughput.plot));
    b.setSize(size(depth.plot));
  }).observe(chartsEl);
  return { a, b };
}

function renderCharts(d: DashboardData): void {
  plots ??= makePlots();
  const s = d.series;
  plots.a.setData([[...s.t], [...s.pages], [...s.items]]);
  plots.b.setData([[...s.t], [...s.depth], [...s.discovered]]);
  for (const box of [throughput.plot, depth.plot]) {
    let none = box.querySelector<HTMLElement>('.none');
    if (s.t.length < 2) {
      if (!none)
        box.append(
          (none = h(
            'div',
            { class: 'none' },
            d.run ? 'Collecting samples…' : 'This task has not run on this Redis yet.',
          )),
        );
    } else none?.remove();
  }
}

function kpi(label: string, value: string, detail?: string, cls = '', ic?: string): HTMLElement {
  return h(
    'div',
    { class: `kpi ${cls}`, role: 'group', 'aria-label': `${label}: ${value}${detail ? `, ${detail}` : ''}` },
    h('div', { class: 'label' }, ic ? icon(ic) : null, label),
    h('div', { class: 'value' }, value),
    detail ? h('div', { class: 'detail', title: detail }, detail) : null,
  );
}

function etaText(d: DashboardData): [string, string] {
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

function renderHeader(d: DashboardData): void {
  const state = d.run?.state ?? 'none';
  const elapsed = d.run?.elapsedMs ?? 0;
  const parts: (HTMLElement | null)[] = [
    h('h1', {}, icon('pulse'), `Dashboard: ${d.task}`),
    h(
      'span',
      { class: `state ${state}`, title: d.run?.phase ?? '' },
      state === 'running' ? h('span', { class: 'dot' }) : null,
      state === 'none' ? 'never run' : state,
    ),
    d.run
      ? h(
          'span',
          { class: 'meta' },
          `run ${d.run.id} · started ${new Date(d.run.startedAt).toLocaleTimeString()} · ${fmtDuration(elapsed)}`,
        )
      : null,
    h('span', { class: 'spacer' }),
    h(
      'vscode-button',
      { secondary: true, icon: 'table', on: { click: () => send({ type: 'openResults' }) } },
      'Open Results',
    ),
  ];
  headerEl.replaceChildren(...parts.filter((x): x is HTMLElement => x !== null));
}

function renderChanges(d: DashboardData): void {
  const c = d.changes;
  changesEl.hidden = !c;
  if (!c) return;
  const n = (x: number) => fmtInt(x);
  const line = h(
    'div',
    { class: 'line' },
    icon('diff'),
    h(
      'span',
      { 'data-figure': 'changes' },
      `This run: ${n(c.added)} added, ${n(c.changed)} changed, ${n(c.removed)} removed`,
    ),
    c.complete
      ? null
      : h(
          'span',
          {
            class: 'meta',
            title: 'A failed page or the page limit cut the run short: its missing items are not called removed',
          },
          ' (not complete: nothing marked removed)',
        ),
    c.added + c.changed + c.removed > 0
      ? h(
          'vscode-button',
          { secondary: true, icon: 'diff', on: { click: () => send({ type: 'openChanges' }) } },
          'Show changes',
        )
      : null,
  );
  const notify = c.notify;
  const note =
    notify?.status === 'failed'
      ? h(
          'div',
          { class: 'notify failed', 'data-figure': 'notify' },
          icon('warning'),
          `Notification not delivered: ${notify.reason ?? 'no reason recorded'}`,
        )
      : notify?.status === 'delivered'
        ? h(
            'div',
            { class: 'notify', 'data-figure': 'notify' },
            icon('check'),
            `Notification delivered${notify.attempts > 1 ? ` (attempt ${notify.attempts})` : ''}`,
          )
        : notify?.status === 'skipped'
          ? h(
              'div',
              { class: 'notify', 'data-figure': 'notify' },
              icon('info'),
              `No notification sent: ${notify.reason ?? 'nothing to send'}`,
            )
          : null;
  changesEl.replaceChildren(line, ...(note ? [note] : []));
}

function renderKpis(d: DashboardData): void {
  const [eta, etaDetail] = etaText(d);
  const c = (label: string) => d.counters.find((x) => x.label === label);
  const failed = c('Failed');
  const rateDetail = d.rateWindow;
  const items = [
    kpi(
      'Pages / s',
      d.pagesPerSec.toFixed(1),
      `finished (fetched, skipped or failed), ${rateDetail}`,
      'rate',
      'dashboard',
    ),
    kpi('Items / s', d.itemsPerSec.toFixed(1), rateDetail, 'items', 'symbol-field'),
    kpi('Queue', fmtInt(d.queue.total), d.queue.text, '', 'list-unordered'),
    kpi('ETA', eta, etaDetail, '', 'watch'),
    ...d.counters.map((x) =>
      kpi(
        x.label,
        x.label === 'Downloaded' ? fmtBytes(x.value) : fmtInt(x.value),
        x.label === 'Downloaded' ? undefined : x.detail,
        x === failed && x.value > 0 ? 'bad' : x.label === 'Skipped' && x.value > 0 ? 'warn' : '',
        x.label === 'Failed'
          ? 'error'
          : x.label === 'Skipped'
            ? 'debug-step-over'
            : x.label === 'Items'
              ? 'database'
              : x.label === 'Discovered'
                ? 'search'
                : x.label === 'Downloaded'
                  ? 'cloud-download'
                  : x.label === 'Links dropped'
                    ? 'filter'
                    : 'check',
      ),
    ),
  ];
  kpisEl.replaceChildren(...items);
}

/** Path and query: the host is the same for most URLs of a crawl (the full URL is in the tooltip). */
function shortUrl(u: string): string {
  try {
    const x = new URL(u);
    return `${x.pathname}${x.search}`;
  } catch {
    return u;
  }
}

function urlList(urls: readonly string[], shots: ReadonlySet<string>): HTMLElement {
  return h(
    'div',
    {},
    ...urls.map((u) =>
      h(
        'div',
        { class: 'url-row' },
        h(
          'button',
          { class: 'link', title: `Open ${u}`, on: { click: () => send({ type: 'openUrl', url: u }) } },
          shortUrl(u),
        ),
        h(
          'button',
          {
            class: 'link find',
            title: `Find ${u}: where it is and why`,
            'aria-label': `Find URL ${u}`,
            on: { click: () => send({ type: 'findUrl', url: u }) },
          },
          icon('search'),
        ),
        shots.has(u)
          ? h(
              'button',
              {
                class: 'link find',
                title: `Screenshot of ${u} as the browser rendered it`,
                'aria-label': `Screenshot of ${u}`,
                on: { click: () => send({ type: 'showScreenshot', url: u }) },
              },
              icon('device-camera'),
            )
          : null,
      ),
    ),
  );
}

let toast = '';

function renderGroups(
  el: HTMLElement,
  title: string,
  ic: string,
  rows: readonly GroupRow[],
  retry: boolean,
  hint: string,
  screenshots: readonly string[],
): void {
  const head = h(
    'h2',
    {},
    icon(ic),
    title,
    h('span', { class: 'hint' }, hint),
    retry && toast ? h('span', { class: 'toast', role: 'status' }, toast) : null,
  );
  const shots = new Set(screenshots);
  // Under the failures: every kept screenshot (`browser.screenshot`), not only those of the sample URLs.
  const shotList =
    retry && screenshots.length
      ? h(
          'div',
          { class: 'shots' },
          h('h3', {}, icon('device-camera'), `Screenshots of rendered pages (${screenshots.length}, newest first)`),
          urlList(screenshots, shots),
        )
      : null;
  if (rows.length === 0) {
    el.replaceChildren(head, h('div', { class: 'empty' }, retry ? 'No failures.' : 'Nothing skipped.'), shotList ?? '');
    return;
  }
  const table = h(
    'table',
    {},
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        h('th', {}, retry ? 'cause' : 'reason'),
        h('th', { class: 'num' }, 'count'),
        retry ? h('th', { class: 'num', title: 'Failed jobs the queue still keeps' }, 'jobs kept') : null,
        h('th', {}, 'sample URLs'),
        retry ? h('th', {}, '') : null,
      ),
    ),
    h(
      'tbody',
      {},
      ...rows.map((g) =>
        h(
          'tr',
          {},
          h(
            'td',
            {},
            h('span', { class: `group-label${/^http-4/.test(g.group) ? ' http-4' : retry ? ' bad' : ''}` }, g.label),
          ),
          h('td', { class: 'num' }, fmtInt(g.count)),
          retry ? h('td', { class: 'num' }, fmtInt(g.jobs)) : null,
          h(
            'td',
            { class: 'urls' },
            g.urls.length
              ? urlList(g.urls, shots)
              : h('span', { class: 'muted' }, g.group === 'limit' ? 'links over maxPages are never queued' : '—'),
          ),
          retry
            ? h(
                'td',
                {},
                h(
                  'vscode-button',
                  {
                    secondary: true,
                    icon: 'debug-restart',
                    disabled: g.jobs === 0,
                    title: `Retry the ${g.jobs} failed job(s) of this group`,
                    'data-group': g.group,
                    on: { click: () => send({ type: 'retryGroup', group: g.group }) },
                  },
                  'Retry all',
                ),
              )
            : null,
        ),
      ),
    ),
  );
  el.replaceChildren(head, table, shotList ?? '');
}

function renderHosts(d: DashboardData): void {
  const head = h(
    'h2',
    {},
    icon('globe'),
    'Hosts',
    h('span', { class: 'hint' }, 'pages per host and the politeness in force'),
  );
  if (d.hosts.length === 0) {
    hostsEl.replaceChildren(head, h('div', { class: 'empty' }, 'No page finished yet.'));
    return;
  }
  const max = Math.max(1, ...d.hosts.map((x) => x.done + x.failed + x.skipped));
  hostsEl.replaceChildren(
    head,
    h(
      'table',
      {},
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          h('th', {}, 'host'),
          h('th', { class: 'num' }, 'done'),
          h('th', { class: 'num' }, 'failed'),
          h('th', { class: 'num' }, 'skipped'),
          h('th', { class: 'num' }, 'in flight'),
          h('th', { class: 'num' }, 'delay'),
          h('th', { class: 'num' }, 'next start'),
        ),
      ),
      h(
        'tbody',
        {},
        ...d.hosts.map((x) => {
          const bar = h('div', { class: 'bar' }, h('div', {}));
          (bar.firstChild as HTMLElement).style.width = `${((x.done + x.failed + x.skipped) * 100) / max}%`;
          return h(
            'tr',
            {},
            h('td', {}, x.host, bar),
            h('td', { class: 'num' }, fmtInt(x.done)),
            h('td', { class: 'num' }, fmtInt(x.failed)),
            h('td', { class: 'num' }, fmtInt(x.skipped)),
            h('td', { class: 'num' }, fmtInt(x.inFlight)),
            h(
              'td',
              {
                class: 'num',
                title: x.crawlDelayMs ? `robots.txt Crawl-delay ${x.crawlDelayMs} ms` : "the task's perHost.delay",
              },
              `${fmtInt(x.delayMs)} ms${x.crawlDelayMs ? ' (robots)' : ''}`,
            ),
            h('td', { class: 'num' }, x.nextInMs > 0 ? `in ${fmtInt(x.nextInMs)} ms` : 'now'),
          );
        }),
      ),
    ),
  );
}

function renderWorkers(d: DashboardData): void {
  const head = h(
    'h2',
    {},
    icon('server-process'),
    'Workers',
    h('span', { class: 'hint' }, 'from their heartbeats in Redis (every 5 s)'),
  );
  if (d.workers.length === 0) {
    workersEl.replaceChildren(
      head,
      h(
        'div',
        { class: 'empty' },
        'No worker is serving this task. Start the crawl, or run `crawl-studio worker <task> --redis <url>` on any machine.',
      ),
    );
    return;
  }
  workersEl.replaceChildren(
    head,
    h(
      'table',
      {},
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          h('th', {}, 'worker'),
          h('th', {}, 'where'),
          h('th', { class: 'num' }, 'concurrency'),
          h('th', { class: 'num' }, 'processed'),
          h('th', { class: 'num' }, 'failed'),
          h(
            'th',
            {
              class: 'num',
              title:
                "Pages finished a second between its last two heartbeats (the task's pages/s above is over " +
                d.rateWindow +
                ')',
            },
            'pages/s (last beat)',
          ),
          h('th', { class: 'num' }, 'last seen'),
        ),
      ),
      h(
        'tbody',
        {},
        ...d.workers.map((w) =>
          h(
            'tr',
            {},
            h('td', {}, w.id),
            h(
              'td',
              {},
              h(
                'span',
                { class: `tag ${w.local ? 'local' : 'remote'}` },
                w.local ? 'this machine' : `remote: ${w.host}`,
              ),
            ),
            h('td', { class: 'num' }, fmtInt(w.concurrency)),
            h('td', { class: 'num' }, fmtInt(w.processed)),
            h('td', { class: 'num' }, fmtInt(w.failed)),
            h('td', { class: 'num' }, w.pagesPerSec === null ? '…' : w.pagesPerSec.toFixed(1)),
            h(
              'td',
              {
                class: `num${w.stale ? ' stale' : ''}`,
                title: w.stale ? 'No heartbeat for a while: the worker may be gone' : undefined,
              },
              `${fmtDuration(w.lastSeenAgoMs)} ago`,
            ),
          ),
        ),
      ),
    ),
  );
}

let last: DashboardData | null = null;

function render(d: DashboardData): void {
  last = d;
  vscode.setState({ file: d.file });
  // Keep focus on a button that is re-rendered (Retry all) so keyboard users do not lose their place.
  const focusGroup = (document.activeElement as HTMLElement | null)?.dataset?.group;
  renderHeader(d);
  renderChanges(d);
  renderKpis(d);
  renderCharts(d);
  renderGroups(
    failuresEl,
    'Failures by cause',
    'error',
    d.failures,
    true,
    'final failures, with the failed jobs the queue keeps',
    d.screenshots ?? [],
  );
  renderGroups(
    skippedEl,
    'Skipped',
    'debug-step-over',
    d.skipped,
    false,
    'pages not fetched, by reason',
    d.screenshots ?? [],
  );
  renderHosts(d);
  renderWorkers(d);
  if (focusGroup) (failuresEl.querySelector(`[data-group="${CSS.escape(focusGroup)}"]`) as HTMLElement | null)?.focus();
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
