// Failures by cause (with Retry all and the kept screenshots) and skipped pages by reason: one table each, of the
// groups the extension counted.

import type { GroupRow } from '../../src/extension/dashboard/protocol';
import { h, icon } from '../shared/dom';
import { fmtInt } from '../shared/format';
import { send } from './host';
import { urlList } from './urlList';

export interface GroupsShown {
  title: string;
  icon: string;
  rows: readonly GroupRow[];
  /** The failures' table: Retry all, the jobs kept, the screenshots and the toast of the last retry. */
  retry: boolean;
  hint: string;
  screenshots: readonly string[];
  toast: string;
}

export function renderGroups(el: HTMLElement, g: GroupsShown): void {
  const head = h(
    'h2',
    {},
    icon(g.icon),
    g.title,
    h('span', { class: 'hint' }, g.hint),
    g.retry && g.toast ? h('span', { class: 'toast', role: 'status' }, g.toast) : null,
  );
  const shots = new Set(g.screenshots);
  // Under the failures: every kept screenshot (`browser.screenshot`), not only those of the sample URLs.
  const shotList =
    g.retry && g.screenshots.length
      ? h(
          'div',
          { class: 'shots' },
          h('h3', {}, icon('device-camera'), `Screenshots of rendered pages (${g.screenshots.length}, newest first)`),
          urlList(g.screenshots, shots),
        )
      : null;
  if (g.rows.length === 0) {
    el.replaceChildren(
      head,
      h('div', { class: 'empty' }, g.retry ? 'No failures.' : 'Nothing skipped.'),
      shotList ?? '',
    );
    return;
  }
  el.replaceChildren(head, groupsTable(g.rows, g.retry, shots), shotList ?? '');
}

function groupsTable(rows: readonly GroupRow[], retry: boolean, shots: ReadonlySet<string>): HTMLElement {
  return h(
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
    h('tbody', {}, ...rows.map((g) => groupRow(g, retry, shots))),
  );
}

function groupRow(g: GroupRow, retry: boolean, shots: ReadonlySet<string>): HTMLElement {
  return h(
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
  );
}
