import type { TaskDetail, TaskSummary, WorkerView } from '../../src/monitor/views';

// The monitor's page: polls the JSON API every POLL_MS and renders it, text only (no HTML from data). Actions send
// the token in a header; the token comes from the form (or once from the address's #token=…, then removed from the
// address) and stays in this tab's sessionStorage.

const POLL_MS = 2_000;
const $ = (id: string) => document.getElementById(id)!;

type Child = Node | string | number | null | undefined | false;
function h(tag: string, attrs: Record<string, string | undefined> = {}, ...children: Child[]): HTMLElement {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) if (v !== undefined) e.setAttribute(k, v);
  for (const c of children)
    if (c !== null && c !== undefined && c !== false) e.append(c instanceof Node ? c : String(c));
  return e;
}
const fmt = (n: number) => n.toLocaleString('en-US');
const fmtRate = (n: number) => n.toFixed(1);
const fmtDuration = (ms: number) => {
  const t = Math.round(ms / 1000);
  return t < 60
    ? `${t}s`
    : t < 3600
      ? `${Math.floor(t / 60)}m ${t % 60}s`
      : `${Math.floor(t / 3600)}h ${Math.floor((t % 3600) / 60)}m`;
};
const ago = (ms: number) =>
  ms < 60_000
    ? `${Math.round(ms / 1000)} s ago`
    : ms < 3_600_000
      ? `${Math.round(ms / 60_000)} min ago`
      : `${(ms / 3_600_000).toFixed(1)} h ago`;

// ---- token -------------------------------------------------------------------------------------------------------
const TOKEN_KEY = 'crawl-studio-monitor-token';
const fromHash = /(?:^#|&)token=([^&]+)/.exec(location.hash);
if (fromHash) {
  sessionStorage.setItem(TOKEN_KEY, decodeURIComponent(fromHash[1]!));
  history.replaceState(null, '', location.pathname + location.search);
}
const token = () => sessionStorage.getItem(TOKEN_KEY) ?? '';
const showTokenState = () => ($('token-state').textContent = token() ? 'actions on' : 'read-only (no token)');
$('token-form').addEventListener('submit', (ev) => {
  ev.preventDefault();
  const v = ($('token') as HTMLInputElement).value.trim();
  if (v) sessionStorage.setItem(TOKEN_KEY, v);
  else sessionStorage.removeItem(TOKEN_KEY);
  ($('token') as HTMLInputElement).value = '';
  showTokenState();
});
showTokenState();

// ---- API ---------------------------------------------------------------------------------------------------------
async function get<T>(path: string): Promise<T> {
  const r = await fetch(path, { cache: 'no-store' });
  const body = (await r.json()) as T & { error?: string };
  if (!r.ok) throw new Error(body.error ?? `HTTP ${r.status}`);
  return body;
}

function say(text: string, error = false): void {
  const m = $('message');
  m.textContent = text;
  m.className = error ? 'error' : '';
}

async function act(task: string, action: string, body: unknown = {}): Promise<void> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (token()) headers['x-crawl-studio-token'] = token();
  try {
    const r = await fetch(`/api/tasks/${encodeURIComponent(task)}/${action}`, {
      method: 'POST',
      headers,
      body: JSON.stringify(body),
    });
    const res = (await r.json()) as { message?: string; error?: string };
    if (r.ok) say(res.message ?? 'done');
    else say(`${action} refused (${r.status}): ${res.error ?? ''}`, true);
  } catch (err) {
    say(`${action} failed: ${err instanceof Error ? err.message : String(err)}`, true);
  }
  void poll();
}

// ---- rendering ---------------------------------------------------------------------------------------------------
let selected: string | null = decodeURIComponent(/(?:^#|&)task=([^&]+)/.exec(location.hash)?.[1] ?? '') || null;

function table(head: readonly (string | [string, 'n'])[], rows: readonly HTMLElement[], empty: string): HTMLElement {
  if (rows.length === 0) return h('p', { class: 'muted' }, empty);
  return h(
    'table',
    {},
    h(
      'thead',
      {},
      h('tr', {}, ...head.map((c) => (Array.isArray(c) ? h('th', { class: 'n' }, c[0]) : h('th', {}, c)))),
    ),
    h('tbody', {}, ...rows),
  );
}
const num = (v: number, figure?: string) => h('td', { class: 'n', 'data-figure': figure }, fmt(v));

function renderTasks(tasks: readonly TaskSummary[], total: number, limit: number): void {
  const rows = tasks.map((t) => {
    const s = t.status;
    const tr = h(
      'tr',
      { class: `task${t.status.task === selected ? ' selected' : ''}`, 'data-task': s.task, tabindex: '0' },
      h('td', {}, s.task),
      h('td', {}, s.run?.run ?? '—'),
      h('td', { 'data-figure': 'state' }, s.run ? `${s.run.state}${s.isPaused ? ' (paused)' : ''}` : 'never run'),
      num(t.finished.done, 'done'),
      num(t.finished.failed, 'failed'),
      num(t.finished.skipped, 'skipped'),
      num(s.stats?.items ?? 0, 'items'),
      num(t.waiting, 'waiting'),
      num(s.counts.active, 'active'),
      num(t.queued, 'queued'),
    );
    const open = () => {
      selected = s.task;
      history.replaceState(null, '', `#task=${encodeURIComponent(s.task)}`);
      void poll();
    };
    tr.addEventListener('click', open);
    tr.addEventListener('keydown', (ev) => ev.key === 'Enter' && open());
    return tr;
  });
  $('tasks').replaceChildren(
    table(
      [
        'Task',
        'Run',
        'State',
        ['Done', 'n'],
        ['Failed', 'n'],
        ['Skipped', 'n'],
        ['Items', 'n'],
        ['Waiting', 'n'],
        ['Active', 'n'],
        ['Queue', 'n'],
      ],
      rows,
      'No task on this Redis yet.',
    ),
    total > limit ? h('p', { class: 'muted' }, `First ${limit} of ${fmt(total)} tasks.`) : '',
  );
}

/** `fetching`: the task's pages being fetched now (TaskDetail.active), counted per worker in its own column. */
function workerRows(workers: readonly WorkerView[], fetching?: TaskDetail['active']): HTMLElement[] {
  return workers.map((w) =>
    h(
      'tr',
      { 'data-worker': w.id, 'data-state': w.state },
      h('td', {}, w.host),
      h('td', { class: 'n' }, w.pid),
      h('td', {}, w.tasks.join(', ')),
      h('td', { class: 'n' }, w.concurrency),
      h('td', { class: 'n' }, fmt(w.pagesDone)),
      h('td', { class: 'n' }, fmt(w.failed)),
      h('td', {}, ago(w.lastSeenAgoMs)),
      h(
        'td',
        { class: `state-${w.state}`, 'data-figure': 'worker-state' },
        w.state === 'live' ? 'live' : w.state === 'silent' ? 'gone (silent)' : 'gone',
      ),
      fetching
        ? h('td', { class: 'n', 'data-figure': 'worker-fetching' }, fetching.filter((p) => p.worker === w.id).length)
        : false,
    ),
  );
}
const WORKER_HEAD: (string | [string, 'n'])[] = [
  'Machine',
  ['PID', 'n'],
  'Tasks',
  ['Concurrency', 'n'],
  ['Pages done', 'n'],
  ['Failed', 'n'],
  'Last seen',
  'State',
];

function renderWorkers(workers: readonly WorkerView[], hidden: number): void {
  $('workers').replaceChildren(
    table(WORKER_HEAD, workerRows(workers), 'No worker has a heartbeat on this Redis.'),
    hidden > 0 ? h('p', { class: 'muted' }, `${hidden} worker(s) gone long ago not shown.`) : '',
  );
}

function chart(label: string, t: readonly number[], v: readonly number[], color: string): HTMLElement {
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
  wrap.append(svg, h('span', { class: 'muted' }, `max ${fmtRate(max)}, now ${fmtRate(v[v.length - 1]!)}`));
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
  const src = `/api/tasks/${encodeURIComponent(task)}/screenshot?run=${encodeURIComponent(run)}&url=${encodeURIComponent(f.url)}&at=${f.at}`;
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

function storedView(d: TaskDetail): HTMLElement {
  const st = d.stored;
  if (!st.location) return h('p', { class: 'muted' }, st.note ?? 'No store.');
  const rows = st.rows.map((r) => `${r.type}: ${fmt(r.count)}`).join(', ');
  return h(
    'div',
    { id: 'stored' },
    h(
      'p',
      { class: 'muted' },
      `${st.location}: ${rows || 'nothing'} written by run ${st.run ?? '—'} (read ${ago(Math.max(0, d.at - st.at))})`,
    ),
    table(
      ['Type', 'Key', 'Fields', 'URL', 'Fetched'],
      st.recent.map((i) =>
        h(
          'tr',
          { 'data-item': i.key },
          h('td', {}, i.type),
          h('td', {}, i.key),
          h('td', { class: 'msg' }, i.fields),
          h('td', { class: 'url' }, i.url ?? ''),
          h('td', {}, ago(Math.max(0, d.at - i.fetchedAt))),
        ),
      ),
      'No item stored yet.',
    ),
  );
}

/** Items each run added, changed and removed (item history, issue 33), and the current run's notification. */
function changesView(d: TaskDetail): HTMLElement {
  const st = d.stored;
  if (!st.location) return h('p', { class: 'muted' }, st.note ?? 'No store.');
  const n = st.notify;
  const note = n
    ? h(
        'p',
        { id: 'notify', class: n.status === 'failed' ? 'bad' : 'muted' },
        n.status === 'failed'
          ? `Notification of run ${st.run ?? ''} not delivered: ${n.reason ?? 'no reason recorded'}`
          : n.status === 'delivered'
            ? `Notification of run ${st.run ?? ''} delivered (attempt ${n.attempts}).`
            : `No notification sent for run ${st.run ?? ''}: ${n.reason ?? 'nothing to send'}.`,
      )
    : '';
  return h(
    'div',
    { id: 'changes' },
    note,
    table(
      ['Run', 'Finished', ['Added', 'n'], ['Changed', 'n'], ['Removed', 'n'], 'Complete'],
      st.changeRuns.map((r) =>
        h(
          'tr',
          { 'data-run': r.run },
          h('td', {}, r.run),
          h('td', {}, ago(Math.max(0, d.at - r.finishedAt))),
          num(r.added, 'added'),
          num(r.changed, 'changed'),
          num(r.removed, 'removed'),
          h(
            'td',
            {
              title: r.complete ? '' : 'a failed page or the page limit cut the run short: nothing was marked removed',
            },
            r.complete ? 'yes' : 'no',
          ),
        ),
      ),
      'No run of this task has item history yet (a run records it when it finishes).',
    ),
    h(
      'p',
      { class: 'muted' },
      h('a', { href: `/api/tasks/${encodeURIComponent(d.status.task)}/changes.atom` }, 'Atom feed of the changes'),
      ' · crawl-studio changes <task file> lists them',
    ),
  );
}

function stopRun(task: string, run: string): Promise<void> | undefined {
  if (
    !window.confirm(
      `Stop run ${run} of ${task}? It ends for good: pages in flight finish, no worker takes another, and the next start begins a new run.`,
    )
  )
    return undefined;
  return act(task, 'stop', { run });
}

function renderTask(d: TaskDetail): void {
  const s = d.status;
  const f = d.figures;
  const name = s.task;
  const st = s.stats;
  const enqueueBox = h('textarea', {
    'aria-label': 'URLs to add, one a line',
    placeholder: 'https://… (one a line)',
  }) as HTMLTextAreaElement;
  const button = (text: string, onClick: () => void, attrs: Record<string, string> = {}) => {
    const b = h('button', { type: 'button', ...attrs }, text);
    b.addEventListener('click', onClick);
    return b;
  };
  const failures = d.failures.map((f) =>
    h(
      'tbody',
      { 'data-reason': f.group },
      h(
        'tr',
        {},
        h('th', {}, `${f.label} (${f.group})`),
        h('td', { class: 'n', 'data-figure': 'reason-count' }, fmt(f.count)),
        h(
          'td',
          {},
          button(`Retry ${fmt(f.count || f.jobs)}`, () => void act(name, 'retry', { reason: f.group }), {
            'data-action': 'retry',
            'data-reason': f.group,
          }),
        ),
      ),
      ...f.pages.map((p) =>
        h(
          'tr',
          {},
          h('td', { class: 'url' }, p.url),
          h('td', { class: 'msg', colspan: '2' }, `${p.message} (attempts: ${p.attempts})`),
        ),
      ),
    ),
  );
  $('task').hidden = false;
  $('task').replaceChildren(
    h(
      'h2',
      {},
      `Task ${name}`,
      s.run ? ` — run ${s.run.run}, ${s.run.state}${s.isPaused ? ' (paused)' : ''}` : ' — never run',
    ),
    h(
      'div',
      { class: 'cards' },
      // Each figure as taskFigures() gives it to every view (observe/taskFigures.ts), its rate's window in its label.
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
    ),
    h(
      'div',
      { class: 'actions' },
      s.isPaused
        ? button('Resume', () => void act(name, 'resume'), { 'data-action': 'resume' })
        : button('Pause', () => void act(name, 'pause'), { 'data-action': 'pause' }),
      s.run && (s.run.state === 'running' || s.run.state === 'starting')
        ? button('Stop run', () => void stopRun(name, s.run!.run), {
            'data-action': 'stop',
            title:
              "End this run for good (the editor's Stop Crawl): pages in flight finish, the next start begins a new run",
          })
        : '',
      enqueueBox,
      button('Add URLs', () => void act(name, 'enqueue', { urls: enqueueBox.value.split(/\s+/).filter(Boolean) }), {
        'data-action': 'enqueue',
      }),
    ),
    h(
      'div',
      { class: 'cards' },
      chart('Pages/s', d.series.t, d.series.pagesPerSec, '#2a7'),
      chart('Queue depth', d.series.t, d.series.queueDepth, '#37c'),
    ),
    h('h3', {}, `Being fetched now (${fmt(s.counts.active)})`),
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
    h('h3', {}, 'Failures by reason'),
    failures.length ? h('table', { id: 'failures' }, ...failures) : h('p', { class: 'muted' }, 'No page failed.'),
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
    h('h3', {}, 'Screenshots of rendered pages'),
    d.screenshots.length && s.run
      ? h('div', { class: 'shots', id: 'screenshots' }, ...d.screenshots.map((f) => shotFigure(name, s.run!.run, f)))
      : h(
          'p',
          { class: 'muted' },
          'No screenshot kept in this run (rules with browser: { screenshot: failure } keep one per failed page).',
        ),
    h('h3', {}, 'Changes by run'),
    changesView(d),
    h('h3', {}, 'Recent items'),
    storedView(d),
    h('h3', {}, 'Workers of this task'),
    table([...WORKER_HEAD, ['Fetching now', 'n']], workerRows(d.workers, d.active), 'No worker takes this task now.'),
  );
}

// ---- polling -----------------------------------------------------------------------------------------------------
let timer: number | undefined;
let polling: Promise<void> | null = null;

function poll(): Promise<void> {
  polling ??= (async () => {
    window.clearTimeout(timer);
    try {
      const all = ($('all-workers') as HTMLInputElement).checked;
      // The task shown is read alongside the lists, not after them: one round trip per poll, not two.
      const asked = selected;
      const [tasks, workers, early] = await Promise.all([
        get<{ tasks: TaskSummary[]; total: number; limit: number }>('/api/tasks'),
        get<{ workers: WorkerView[]; hidden: number }>(`/api/workers${all ? '?all=1' : ''}`),
        asked ? get<TaskDetail>(`/api/tasks/${encodeURIComponent(asked)}`).catch(() => null) : null,
      ]);
      if (!selected && tasks.tasks[0]) selected = tasks.tasks[0].status.task;
      renderTasks(tasks.tasks, tasks.total, tasks.limit);
      renderWorkers(workers.workers, workers.hidden);
      if (selected && tasks.tasks.some((t) => t.status.task === selected))
        renderTask(
          early && asked === selected ? early : await get<TaskDetail>(`/api/tasks/${encodeURIComponent(selected)}`),
        );
      $('updated').textContent = `updated ${new Date().toLocaleTimeString()}`;
      document.body.dataset.updated = String(Date.now());
    } catch (err) {
      $('updated').textContent = `cannot read the monitor: ${err instanceof Error ? err.message : String(err)}`;
    } finally {
      polling = null;
      timer = window.setTimeout(() => void poll(), POLL_MS);
    }
  })();
  return polling;
}
$('all-workers').addEventListener('change', () => void poll());
// A link to #task=NAME (or one typed in the address bar) opens that task without a reload.
window.addEventListener('hashchange', () => {
  const task = /(?:^#|&)task=([^&]+)/.exec(location.hash)?.[1];
  if (!task) return;
  selected = decodeURIComponent(task);
  void poll();
});
void poll();
