// Failures by cause (with Retry all and the kept screenshots) and skipped pages by reason: one table each, of the
// groups the extension counted.
//
// During a crawl the counts move with every snapshot (each second). Each group's row is made once and its cells are
// written again only when they changed, so its Retry all stays the element under the pointer: replaced between a
// click's press and its release, it would get no click.

import type { GroupRow } from '../../src/extension/dashboard/protocol';
import { h, icon, keyedChildren, placeChildren, renderChanged, setText } from '../shared/dom';
import { fmtInt } from '../shared/format';
import { send } from './host';
import { urlList } from './urlList';

export interface GroupsShown {
  title: string;
  icon: string;
  rows: readonly GroupRow[];
  /** The failures' table: Retry all, the jobs kept, the screenshots and the toast of the last retry. */
  retry: boolean;
  /** Why Retry all cannot be used now (a stopped run refuses it: frontier/refused.ts), or null. */
  retryRefused: string | null;
  hint: string;
  screenshots: readonly string[];
  toast: string;
}

interface RowParts {
  readonly tr: HTMLElement;
  readonly label: HTMLElement;
  readonly count: HTMLElement;
  readonly jobs: HTMLElement | null;
  readonly urls: HTMLElement;
  readonly button: HTMLElement | null;
}

/** What one groups section holds, made the first time it is rendered. */
interface Section {
  readonly head: HTMLElement;
  readonly empty: HTMLElement;
  readonly table: HTMLElement;
  readonly tbody: HTMLElement;
  readonly shots: HTMLElement;
  readonly rows: Map<string, RowParts>;
}

const sections = new WeakMap<HTMLElement, Section>();

export function renderGroups(el: HTMLElement, g: GroupsShown): void {
  const s = sections.get(el) ?? newSection(el, g.retry);
  renderChanged(s.head, [g.icon, g.title, g.hint, g.retry ? g.toast : ''], () =>
    s.head.replaceChildren(
      icon(g.icon),
      g.title,
      h('span', { class: 'hint' }, g.hint),
      g.retry && g.toast ? h('span', { class: 'toast', role: 'status' }, g.toast) : '',
    ),
  );
  const shots = new Set(g.screenshots);
  // Under the failures: every kept screenshot (`browser.screenshot`), not only those of the sample URLs.
  const showShots = g.retry && g.screenshots.length > 0;
  if (showShots)
    renderChanged(s.shots, g.screenshots, () =>
      s.shots.replaceChildren(
        h('h3', {}, icon('device-camera'), `Screenshots of rendered pages (${g.screenshots.length}, newest first)`),
        urlList(g.screenshots, shots),
      ),
    );
  keyedChildren(
    s.tbody,
    s.rows,
    g.rows,
    (r) => r.group,
    (r) => groupRow(r, g.retry),
    (p) => p.tr,
    (p, r) => updateRow(p, r, shots, g.retryRefused),
  );
  placeChildren(el, [s.head, g.rows.length ? s.table : s.empty, ...(showShots ? [s.shots] : [])]);
}

function newSection(el: HTMLElement, retry: boolean): Section {
  const tbody = h('tbody');
  const s: Section = {
    head: h('h2'),
    empty: h('div', { class: 'empty' }, retry ? 'No failures.' : 'Nothing skipped.'),
    table: h(
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
      tbody,
    ),
    tbody,
    shots: h('div', { class: 'shots' }),
    rows: new Map(),
  };
  sections.set(el, s);
  return s;
}

function groupRow(g: GroupRow, retry: boolean): RowParts {
  const label = h('td');
  const count = h('td', { class: 'num' });
  const jobs = retry ? h('td', { class: 'num' }) : null;
  const urls = h('td', { class: 'urls' });
  const button = retry
    ? h(
        'vscode-button',
        {
          secondary: true,
          icon: 'debug-restart',
          'data-group': g.group,
          on: { click: () => send({ type: 'retryGroup', group: g.group }) },
        },
        'Retry all',
      )
    : null;
  const tr = h('tr', {}, label, count, jobs, urls, button ? h('td', {}, button) : null);
  return { tr, label, count, jobs, urls, button };
}

function updateRow(p: RowParts, g: GroupRow, shots: ReadonlySet<string>, refused: string | null): void {
  const retry = p.button !== null;
  renderChanged(p.label, g.label, () =>
    p.label.replaceChildren(
      h('span', { class: `group-label${/^http-4/.test(g.group) ? ' http-4' : retry ? ' bad' : ''}` }, g.label),
    ),
  );
  setText(p.count, fmtInt(g.count));
  if (p.jobs) setText(p.jobs, fmtInt(g.jobs));
  renderChanged(p.urls, [g.urls, g.urls.filter((u) => shots.has(u))], () =>
    p.urls.replaceChildren(
      g.urls.length
        ? urlList(g.urls, shots)
        : h('span', { class: 'muted' }, g.group === 'limit' ? 'links over maxPages are never queued' : '—'),
    ),
  );
  if (p.button) {
    p.button.toggleAttribute('disabled', g.jobs === 0 || refused !== null);
    p.button.title = refused ?? `Retry the ${g.jobs} failed job(s) of this group`;
  }
}
