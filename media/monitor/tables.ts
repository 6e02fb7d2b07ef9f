// The monitor's tables: one helper for every table (its head, its rows, what it says when empty), and the workers'
// rows, shown for the whole Redis and for one task.

import type { TaskDetail, WorkerView } from '../../src/monitor/views';
import { h } from '../shared/dom';
import { ago, fmt } from './format';

/** A column's heading; `[label, 'n']` for a number column. */
export type Heading = string | [string, 'n'];

export function table(head: readonly Heading[], rows: readonly HTMLElement[], empty: string): HTMLElement {
  if (rows.length === 0) return h('p', { class: 'muted' }, empty);
  return h('table', {}, tableHead(head), h('tbody', {}, ...rows));
}

export function tableHead(head: readonly Heading[]): HTMLElement {
  return h(
    'thead',
    {},
    h('tr', {}, ...head.map((c) => (Array.isArray(c) ? h('th', { class: 'n' }, c[0]) : h('th', {}, c)))),
  );
}
export const num = (v: number, figure?: string) => h('td', { class: 'n', 'data-figure': figure }, fmt(v));

/** `fetching`: the task's pages being fetched now (TaskDetail.active), counted per worker in its own column. */
export function workerRows(workers: readonly WorkerView[], fetching?: TaskDetail['active']): HTMLElement[] {
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
        ...(w.warnings ?? []).map((text) => h('div', { class: 'warning', 'data-figure': 'worker-warning' }, text)),
      ),
      fetching
        ? h('td', { class: 'n', 'data-figure': 'worker-fetching' }, fetching.filter((p) => p.worker === w.id).length)
        : false,
    ),
  );
}

export const WORKER_HEAD: Heading[] = [
  'Machine',
  ['PID', 'n'],
  'Tasks',
  ['Concurrency', 'n'],
  ['Pages done', 'n'],
  ['Failed', 'n'],
  'Last seen',
  'State',
];
