// The monitor's page of one task: its figures, actions (pause, resume, stop, add URLs, retry), charts, the pages
// being fetched, failures, skips, drops, the frontier, hosts, screenshots, its store and its workers.

import type { TaskDetail } from '../../src/monitor/views';
import { byId, h, keyedChildren, placeChildren, renderChanged, setText, withCode } from '../shared/dom';
import { fmtDuration } from '../shared/format';
import { ago, fmt, fmtRate } from './format';
import { changesView, storedView } from './taskStore';
import { num, table, WORKER_HEAD, workerRows } from './tables';

/** Asks the server to act on a task, then reads the monitor again; resolves with whether the server did it. */
export type Act = (task: string, action: string, body?: unknown) => Promise<boolean>;

const PARTS = [
  'title',
  'cards',
  'actions',
  'charts',
  'fetching',
  'notFetched',
  'frontier',
  'shots',
  'changes',
  'stored',
  'workers',
] as const;
type Part = (typeof PARTS)[number];

/**
 * The task shown: its parts, made once per task, each rebuilt only when what it shows changed. Rebuilt every poll,
 * a button under the pointer was replaced between a click's press and release (the click reached neither), the URLs
 * typed into Add URLs were wiped every 2 s, and every screenshot was fetched again.
 */
let view: {
  readonly task: string;
  readonly parts: Record<Part, HTMLElement>;
  readonly urls: HTMLTextAreaElement;
} | null = null;

export function renderTask(d: TaskDetail, act: Act): void {
  const s = d.status;
  const name = s.task;
  const root = byId('task');
  root.hidden = false;
  if (view?.task !== name) {
    const parts = {} as Record<Part, HTMLElement>;
    for (const p of PARTS) parts[p] = h('div', { 'data-part': p });
    view = {
      task: name,
      parts,
      urls: h('textarea', { 'aria-label': 'URLs to add, one a line', placeholder: 'https://… (one a line)' }),
    };
    root.replaceChildren(...PARTS.map((p) => parts[p]));
  }
  const { parts, urls } = view;
  const show = (part: Part, inputs: unknown, build: () => (HTMLElement | string)[]) =>
    renderChanged(parts[part], inputs, () => parts[part].replaceChildren(...build()));
  show('title', [name, s.run?.run, d.phase.text], () => [
    h('h2', {}, `Task ${name}`, s.run ? ` — run ${s.run.run}, ${d.phase.word}` : ' — never run'),
    // What the phase means and what moves it on (an interrupted run is resumed by Start Crawl or `run`), as `status`
    // and the dashboard say it.
    h('p', { class: 'msg', 'data-figure': 'phase' }, ...withCode(d.phase.text)),
  ]);
  show('cards', [d.figures, s.stats, s.counts, d.stored.location, d.stored.rows, d.stored.changes], () => [
    taskCards(d),
  ]);
  show('actions', [name, s.isPaused, s.run?.run, s.run?.state], () => [taskActions(d, act, urls)]);
  // A run that ended has no "now": its history stops at its driver's last sample.
  const last = s.run?.state === 'finished' || s.run?.state === 'stopped' ? 'at the end' : 'now';
  show('charts', [d.series, last], () => [
    h(
      'div',
      { class: 'cards' },
      chart('Pages/s', d.series.t, d.series.pagesPerSec, '#2a7', fmtRate, last),
      chart('Queue depth', d.series.t, d.series.queueDepth, '#37c', fmt, last),
    ),
  ]);
  // "Since" is counted from the reading's time: it changes with every poll only while pages are in flight.
  show('fetching', [s.counts.active, d.active, d.active.length ? d.at : 0], () => fetchingNow(d));
  // Placed, not replaced: the failures table in it is kept from poll to poll (failuresOf).
  renderChanged(parts.notFetched, [d.failures, d.skipped, d.dropped], () =>
    placeChildren(parts.notFetched, pagesNotFetched(d, act)),
  );
  show('frontier', [d.frontier, d.hosts], () => frontierAndHosts(d));
  show('shots', [s.run?.run, d.screenshots], () => [
    h('h3', {}, 'Screenshots of rendered pages'),
    d.screenshots.length && s.run
      ? h('div', { class: 'shots', id: 'screenshots' }, ...d.screenshots.map((f) => shotFigure(name, s.run!.run, f)))
      : h(
          'p',
          { class: 'muted' },
          'No screenshot kept in this run (rules with browser: { screenshot: failure } keep one per failed page).',
        ),
  ]);
  show('changes', [d.stored, d.at], () => [h('h3', {}, 'Changes by run'), changesView(d)]);
  show('stored', [d.stored, d.at], () => [h('h3', {}, 'Recent items'), storedView(d)]);
  show('workers', [d.workers, d.active], () => [
    h('h3', {}, 'Workers of this task'),
    table([...WORKER_HEAD, ['Fetching now', 'n']], workerRows(d.workers, d.active), 'No worker takes this task now.'),
  ]);
}

function button(text: string, onClick: () => void, attrs: Record<string, string> = {}): HTMLElement {
  const b = h('button', { type: 'button', ...attrs }, text);
  b.addEventListener('click', onClick);
  return b;
}

/** Each figure as taskFigures() gives it to every view (observe/taskFigures.ts), its rate's window in its label. */
function taskCards(d: TaskDetail): HTMLElement {
  const s = d.status;
  const f = d.figures;
  const st = s.stats;
  return h(
    'div',
    { class: 'cards' },
    card('pages done', fmt(f.pages.done), 'done'),
    card('failed', fmt(f.pages.failed), 'failed'),
    card('skipped', fmt(f.pages.skipped), 'skipped'),
    card('items', fmt(f.items), 'items'),
    card('discovered', fmt(st?.enqueued ?? 0), 'enqueued'),
    card('waiting', fmt(f.queue.waiting), 'waiting'),
    card('in the frontier', fmt(s.counts.frontier), 'frontier'),
    card('active', fmt(f.queue.active), 'active'),
    card('delayed', fmt(f.queue.delayed), 'delayed'),
    card(f.rate.label, fmtRate(f.rate.pagesPerSec), 'pages-per-sec'),
    card('ETA', f.eta.seconds === null ? f.eta.state.replace('ok', '—') : fmtDuration(f.eta.seconds * 1000), 'eta'),
    card('downloaded bytes', fmt(st?.bytes ?? 0), 'bytes'),
    card(
      'items stored (this run)',
      d.stored.location ? fmt(d.stored.rows.reduce((a, r) => a + r.count, 0)) : '—',
      'stored',
    ),
    // Counted when the run closes its history: '—' while it runs.
    card('items added (this run)', d.stored.changes ? fmt(d.stored.changes.added) : '—', 'items-added'),
    card('items changed (this run)', d.stored.changes ? fmt(d.stored.changes.changed) : '—', 'items-changed'),
    card('items removed (this run)', d.stored.changes ? fmt(d.stored.changes.removed) : '—', 'items-removed'),
  );
}

function taskActions(d: TaskDetail, act: Act, urls: HTMLTextAreaElement): HTMLElement {
  const s = d.status;
  const name = s.task;
  // A stopped run is over: its queue stays paused, and Resume is refused (a start begins a new run), as the Queue
  // Explorer offers neither.
  const stopped = s.run?.state === 'stopped';
  return h(
    'div',
    { class: 'actions' },
    stopped
      ? ''
      : s.isPaused
        ? button('Resume', () => void act(name, 'resume'), { 'data-action': 'resume' })
        : button('Pause', () => void act(name, 'pause'), { 'data-action': 'pause' }),
    s.run && (s.run.state === 'running' || s.run.state === 'starting')
      ? button('Stop run', () => void stopRun(act, name, s.run!.run), {
          'data-action': 'stop',
          title:
            "End this run for good (the editor's Stop Crawl): pages in flight finish, the next start begins a new run",
        })
      : '',
    // Nor are URLs added to it: the engine refuses them (frontier/refused.ts), as it refuses a retry below.
    stopped ? '' : urls,
    stopped
      ? ''
      : button(
          'Add URLs',
          () =>
            void act(name, 'enqueue', { urls: urls.value.split(/\s+/).filter(Boolean) }).then((added) => {
              // Kept when refused (a missing token, a URL no rule takes): the message says why, the list can be fixed.
              if (added) urls.value = '';
            }),
          { 'data-action': 'enqueue' },
        ),
  );
}

function fetchingNow(d: TaskDetail): HTMLElement[] {
  return [
    h('h3', {}, `Being fetched now (${fmt(d.status.counts.active)})`),
    table(
      ['URL', 'Rule', ['Depth', 'n'], 'Since', ['Attempt', 'n'], 'Worker'],
      d.active.map((p) =>
        h(
          'tr',
          {},
          h('td', { class: 'url' }, p.url),
          h('td', {}, p.rule),
          num(p.depth),
          h('td', {}, p.startedAt ? ago(Math.max(0, d.at - p.startedAt)) : '—'),
          num(p.attempt),
          h('td', {}, p.worker ?? '—'),
        ),
      ),
      'No page is being fetched.',
    ),
  ];
}

/** A failure reason's rows in the failures table: its heading row with Retry, then its sample pages. */
interface FailureRows {
  readonly tbody: HTMLElement;
  readonly label: HTMLElement;
  readonly count: HTMLElement;
  readonly retry: HTMLElement;
  readonly head: HTMLElement;
}

/**
 * The failures table of the task shown, kept from poll to poll: while failures accumulate their counts change every
 * poll, and each reason's Retry must stay the element under the pointer (see `view`).
 */
interface FailuresTable {
  readonly task: string;
  readonly table: HTMLElement;
  readonly none: HTMLElement;
  readonly rows: Map<string, FailureRows>;
}
let failuresTable: FailuresTable | null = null;

function failuresOf(d: TaskDetail, act: Act): HTMLElement {
  const name = d.status.task;
  if (failuresTable?.task !== name)
    failuresTable = {
      task: name,
      table: h('table', { id: 'failures' }),
      none: h('p', { class: 'muted' }, 'No page failed.'),
      rows: new Map(),
    };
  const t = failuresTable;
  keyedChildren(
    t.table,
    t.rows,
    d.failures,
    (f) => f.group,
    (f) => {
      const label = h('th');
      const count = h('td', { class: 'n', 'data-figure': 'reason-count' });
      const retry = button('', () => void act(name, 'retry', { reason: f.group }), {
        'data-action': 'retry',
        'data-reason': f.group,
      });
      const head = h('tr', {}, label, count, h('td', {}, retry));
      return { tbody: h('tbody', { 'data-reason': f.group }, head), label, count, retry, head };
    },
    (r) => r.tbody,
    (r, f) => {
      setText(r.label, `${f.label} (${f.group})`);
      setText(r.count, fmt(f.count));
      setText(r.retry, `Retry ${fmt(f.count || f.jobs)}`);
      const stopped = d.status.run?.state === 'stopped';
      r.retry.toggleAttribute('disabled', stopped);
      r.retry.title = stopped ? 'Stopped: the next start begins a new run.' : '';
      renderChanged(r.tbody, f.pages, () =>
        placeChildren(r.tbody, [
          r.head,
          ...f.pages.map((p) =>
            h(
              'tr',
              {},
              h('td', { class: 'url' }, p.url),
              h('td', { class: 'msg', colspan: '2' }, `${p.message} (attempts: ${p.attempts})`),
            ),
          ),
        ]),
      );
    },
  );
  return d.failures.length ? t.table : t.none;
}

/** Failures (with Retry), skips and dropped links, each by reason. */
function pagesNotFetched(d: TaskDetail, act: Act): HTMLElement[] {
  return [
    h('h3', {}, 'Failures by reason'),
    failuresOf(d, act),
    h('h3', {}, 'Skipped by reason'),
    table(
      ['Reason', ['Pages', 'n'], 'Recent URLs'],
      d.skipped.map((g) =>
        h(
          'tr',
          { 'data-reason': g.reason },
          h('td', {}, g.label),
          num(g.count),
          h('td', { class: 'url' }, g.urls.join('\n')),
        ),
      ),
      'No page skipped.',
    ),
    h('h3', {}, 'Dropped links by reason'),
    table(
      ['Reason', ['Links', 'n']],
      d.dropped.map((g) => h('tr', { 'data-reason': g.reason }, h('td', {}, g.reason), num(g.count))),
      'No link dropped.',
    ),
  ];
}

function frontierAndHosts(d: TaskDetail): HTMLElement[] {
  return [
    h('h3', {}, `Frontier by host (${fmt(d.frontier.hosts)} host(s) with waiting pages)`),
    table(
      ['Host', 'Band', ['Waiting', 'n']],
      d.frontier.first.map((f) => h('tr', {}, h('td', {}, f.host), h('td', {}, f.band), num(f.waiting))),
      'Nothing waits in the frontier.',
    ),
    h('h3', {}, 'Hosts'),
    table(
      ['Host', ['Done', 'n'], ['Failed', 'n'], ['Skipped', 'n'], ['In flight', 'n']],
      d.hosts.map((x) => h('tr', {}, h('td', {}, x.host), num(x.done), num(x.failed), num(x.skipped), num(x.inFlight))),
      'No host yet.',
    ),
  ];
}

/**
 * A line of a series over time; `format` writes its values (a rate with a decimal, a queue's depth as a count), `last`
 * names the newest one (now, or at the end of a run that ended).
 */
function chart(
  label: string,
  t: readonly number[],
  v: readonly number[],
  color: string,
  format: (n: number) => string,
  last: string,
): HTMLElement {
  const wrap = h('div', {}, h('h3', {}, label));
  if (v.length < 2) {
    wrap.append(h('p', { class: 'muted' }, 'No history yet.'));
    return wrap;
  }
  const ns = 'http://www.w3.org/2000/svg';
  const svg = document.createElementNS(ns, 'svg');
  svg.setAttribute('class', 'chart');
  svg.setAttribute('viewBox', '0 0 400 100');
  svg.setAttribute('preserveAspectRatio', 'none');
  const t0 = t[0]!;
  const dt = Math.max(1, t[t.length - 1]! - t0);
  const max = Math.max(1e-9, ...v);
  const line = document.createElementNS(ns, 'polyline');
  line.setAttribute(
    'points',
    v.map((y, i) => `${(((t[i]! - t0) / dt) * 400).toFixed(1)},${(98 - (y / max) * 96).toFixed(1)}`).join(' '),
  );
  line.setAttribute('stroke', color);
  svg.append(line);
  wrap.append(svg, h('span', { class: 'muted' }, `max ${format(max)}, ${last} ${format(v[v.length - 1]!)}`));
  return wrap;
}

function card(label: string, value: string, figure: string): HTMLElement {
  return h(
    'div',
    { class: 'card' },
    h('div', { class: 'v', 'data-figure': figure }, value),
    h('div', { class: 'l' }, label),
  );
}

function shotFigure(task: string, run: string, f: TaskDetail['screenshots'][number]): HTMLElement {
  const src = `api/tasks/${encodeURIComponent(task)}/screenshot?run=${encodeURIComponent(run)}&url=${encodeURIComponent(f.url)}&at=${f.at}`;
  return h(
    'figure',
    { 'data-url': f.url },
    h(
      'a',
      { href: src, target: '_blank', rel: 'noopener' },
      h('img', { src, alt: `screenshot of ${f.finalUrl}`, loading: 'lazy' }),
    ),
    h('figcaption', {}, h('span', { class: 'url' }, f.url), h('br'), h('span', { class: 'msg' }, f.why)),
  );
}

function stopRun(act: Act, task: string, run: string): Promise<boolean> | undefined {
  if (
    !window.confirm(
      `Stop run ${run} of ${task}? It ends for good: pages in flight finish, no worker takes another, and the next start begins a new run.`,
    )
  )
    return undefined;
  return act(task, 'stop', { run });
}
