import type { TaskDetail, TaskSummary, WorkerView } from '../../src/monitor/views';
import { byId, h, keyedChildren, placeChildren, renderChanged, setText } from '../shared/dom';
import { act as request, get } from './api';
import { fmt } from './format';
import { num, table, tableHead, WORKER_HEAD, workerRows } from './tables';
import { renderTask } from './taskView';

// The monitor's page: polls the JSON API every POLL_MS and renders what changed (renderChanged: a button or a row
// under the pointer, the URLs typed into Add URLs and the screenshots stay), text only (no HTML from data). Actions send
// the token in a header; the token comes from the form (or once from the address's #token=…, then removed from the
// address) and stays in this tab's sessionStorage.

const POLL_MS = 2_000;

// ---- token -------------------------------------------------------------------------------------------------------
const TOKEN_KEY = 'crawl-studio-monitor-token';
const fromHash = /(?:^#|&)token=([^&]+)/.exec(location.hash);
if (fromHash) {
  sessionStorage.setItem(TOKEN_KEY, decodeURIComponent(fromHash[1]!));
  // Only the token leaves the address: a link to #token=T&task=NAME opened the first task, not NAME.
  const rest = location.hash
    .slice(1)
    .split('&')
    .filter((p) => !p.startsWith('token='));
  history.replaceState(null, '', location.pathname + location.search + (rest.length ? `#${rest.join('&')}` : ''));
}
const token = () => sessionStorage.getItem(TOKEN_KEY) ?? '';
const showTokenState = () => (byId('token-state').textContent = token() ? 'actions on' : 'read-only (no token)');
byId('token-form').addEventListener('submit', (ev) => {
  ev.preventDefault();
  const v = byId<HTMLInputElement>('token').value.trim();
  if (v) sessionStorage.setItem(TOKEN_KEY, v);
  else sessionStorage.removeItem(TOKEN_KEY);
  byId<HTMLInputElement>('token').value = '';
  showTokenState();
});
showTokenState();

/** Acts on a task with this tab's token, then reads the monitor again. */
async function act(task: string, action: string, body: unknown = {}): Promise<boolean> {
  const done = await request(token(), task, action, body);
  void poll();
  return done;
}

// ---- rendering ---------------------------------------------------------------------------------------------------
let selected: string | null = decodeURIComponent(/(?:^#|&)task=([^&]+)/.exec(location.hash)?.[1] ?? '') || null;

function renderTasks(tasks: readonly TaskSummary[], total: number, limit: number): void {
  renderChanged(byId('tasks'), [tasks, total, limit, selected], () => renderTaskList(tasks, total, limit));
}

/**
 * The task list, kept from poll to poll: during a crawl its counts change with every poll, and a row built anew
 * each time took a click pressed on the old one (the task did not open) and the keyboard's focus with it.
 */
const taskList = {
  tbody: h('tbody'),
  empty: h('p', { class: 'muted' }, 'No task on this Redis yet.'),
  more: h('p', { class: 'muted' }),
  rows: new Map<string, { readonly tr: HTMLElement; readonly cells: readonly HTMLElement[] }>(),
};
const taskTable = h(
  'table',
  {},
  tableHead([
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
  ]),
  taskList.tbody,
);

function renderTaskList(tasks: readonly TaskSummary[], total: number, limit: number): void {
  keyedChildren(
    taskList.tbody,
    taskList.rows,
    tasks,
    (t) => t.status.task,
    (t) => {
      const task = t.status.task;
      const cells = [
        h('td'),
        h('td'),
        h('td', { 'data-figure': 'state' }),
        ...['done', 'failed', 'skipped', 'items', 'waiting', 'active', 'queued'].map((f) => num(0, f)),
      ];
      const tr = h('tr', { class: 'task', 'data-task': task, tabindex: '0' }, ...cells);
      const open = () => {
        selected = task;
        history.replaceState(null, '', `#task=${encodeURIComponent(task)}`);
        void poll();
      };
      tr.addEventListener('click', open);
      tr.addEventListener('keydown', (ev) => ev.key === 'Enter' && open());
      return { tr, cells };
    },
    (r) => r.tr,
    (r, t) => {
      const s = t.status;
      r.tr.classList.toggle('selected', s.task === selected);
      const texts = [
        s.task,
        s.run?.run ?? '—',
        // The run's phase, not its meta's state: a run no process drives is "interrupted", as `status` says.
        t.phase.word,
        ...[
          t.finished.done,
          t.finished.failed,
          t.finished.skipped,
          s.stats?.items ?? 0,
          t.waiting,
          s.counts.active,
          t.queued,
        ].map(fmt),
      ];
      r.cells.forEach((c, i) => setText(c, texts[i] ?? ''));
    },
  );
  setText(taskList.more, `First ${limit} of ${fmt(total)} tasks.`);
  placeChildren(byId('tasks'), [tasks.length ? taskTable : taskList.empty, ...(total > limit ? [taskList.more] : [])]);
}

function renderWorkers(workers: readonly WorkerView[], hidden: number): void {
  renderChanged(byId('workers'), [workers, hidden], () =>
    byId('workers').replaceChildren(
      table(WORKER_HEAD, workerRows(workers), 'No worker has a heartbeat on this Redis.'),
      hidden > 0 ? h('p', { class: 'muted' }, `${hidden} worker(s) gone long ago not shown.`) : '',
    ),
  );
}

// ---- polling -----------------------------------------------------------------------------------------------------
let timer: number | undefined;
let polling: Promise<void> | null = null;

function poll(): Promise<void> {
  polling ??= (async () => {
    window.clearTimeout(timer);
    let again = false;
    try {
      const all = byId<HTMLInputElement>('all-workers').checked;
      // The task shown is read alongside the lists, not after them: one round trip per poll, not two.
      const asked = selected;
      const [tasks, workers, early] = await Promise.all([
        get<{ tasks: TaskSummary[]; total: number; limit: number }>('api/tasks'),
        get<{ workers: WorkerView[]; hidden: number }>(`api/workers${all ? '?all=1' : ''}`),
        asked ? get<TaskDetail>(`api/tasks/${encodeURIComponent(asked)}`).catch(() => null) : null,
      ]);
      if (!selected && tasks.tasks[0]) selected = tasks.tasks[0].status.task;
      renderTasks(tasks.tasks, tasks.total, tasks.limit);
      renderWorkers(workers.workers, workers.hidden);
      if (selected && tasks.tasks.some((t) => t.status.task === selected)) {
        const detail =
          early && asked === selected ? early : await get<TaskDetail>(`api/tasks/${encodeURIComponent(selected)}`);
        // Another task chosen while it was read (a link, the list): not shown, or the chosen one's view, and what is
        // typed into it, would be replaced by this one's until the next poll.
        if (detail.status.task === selected) renderTask(detail, act);
        else again = true;
      }
      byId('updated').textContent = `updated ${new Date().toLocaleTimeString()}`;
      document.body.dataset.updated = String(Date.now());
    } catch (err) {
      byId('updated').textContent = `cannot read the monitor: ${err instanceof Error ? err.message : String(err)}`;
    } finally {
      polling = null;
      timer = window.setTimeout(() => void poll(), again ? 0 : POLL_MS);
    }
  })();
  return polling;
}
byId('all-workers').addEventListener('change', () => void poll());
// A link to #task=NAME (or one typed in the address bar) opens that task without a reload.
window.addEventListener('hashchange', () => {
  const task = /(?:^#|&)task=([^&]+)/.exec(location.hash)?.[1];
  if (!task) return;
  selected = decodeURIComponent(task);
  void poll();
});
void poll();
