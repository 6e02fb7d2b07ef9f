// The dashboard's top: the header (task, run state, Open Results), the finished run's item changes and its
// notification, and the counters.

import type { DashboardData } from '../../src/extension/dashboard/protocol';
import { h, icon, renderChanged, withCode } from '../shared/dom';
import { fmtBytes, fmtDuration, fmtInt } from '../shared/format';
import { counterIcon, etaText } from './figures';
import { send } from './host';

function kpi(label: string, value: string, detail?: string, cls = '', ic?: string): HTMLElement {
  return h(
    'div',
    { class: `kpi ${cls}`, role: 'group', 'aria-label': `${label}: ${value}${detail ? `, ${detail}` : ''}` },
    h('div', { class: 'label' }, ic ? icon(ic) : null, label),
    h('div', { class: 'value' }, value),
    detail ? h('div', { class: 'detail', title: detail }, ...withCode(detail)) : null,
  );
}

/**
 * The header: task, run state and run (re-rendered when they change) and the Open Results button, made once so a
 * click on it is never lost to a re-render.
 */
export function createHeader(): { readonly el: HTMLElement; render(d: DashboardData): void } {
  const info = h('span', { class: 'info' });
  const el = h(
    'header',
    {},
    info,
    h('span', { class: 'spacer' }),
    h(
      'vscode-button',
      { secondary: true, icon: 'table', on: { click: () => send({ type: 'openResults' }) } },
      'Open Results',
    ),
  );
  return { el, render: (d) => renderChanged(info, [d.task, d.run], () => renderHeaderInfo(info, d)) };
}

function renderHeaderInfo(el: HTMLElement, d: DashboardData): void {
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
  ];
  el.replaceChildren(...parts.filter((x): x is HTMLElement => x !== null));
}

export function renderChanges(changesEl: HTMLElement, d: DashboardData): void {
  const c = d.changes;
  changesEl.hidden = !c;
  if (c) renderChanged(changesEl, c, () => renderChangeLines(changesEl, c));
}

function renderChangeLines(changesEl: HTMLElement, c: NonNullable<DashboardData['changes']>): void {
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

export function renderKpis(kpisEl: HTMLElement, d: DashboardData): void {
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
        counterIcon(x.label),
      ),
    ),
  ];
  kpisEl.replaceChildren(...items);
}
