// What a task's store holds, on the monitor's task page: the items recent runs wrote, and what each run added,
// changed and removed (with the current run's notification).

import type { TaskDetail } from '../../src/monitor/views';
import { h } from '../shared/dom';
import { ago, fmt } from './format';
import { num, table } from './tables';

export function storedView(d: TaskDetail): HTMLElement {
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
export function changesView(d: TaskDetail): HTMLElement {
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
      h('a', { href: `api/tasks/${encodeURIComponent(d.status.task)}/changes.atom` }, 'Atom feed of the changes'),
      ' · crawl-studio changes <task file> lists them',
    ),
  );
}
