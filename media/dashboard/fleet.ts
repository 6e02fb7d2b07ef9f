// Who does the crawling: the hosts (pages per host and the politeness in force) and the workers (from their
// heartbeats in Redis).

import type { DashboardData } from '../../src/extension/dashboard/protocol';
import { h, icon } from '../shared/dom';
import { fmtDuration, fmtInt } from '../shared/format';

export function renderHosts(hostsEl: HTMLElement, d: DashboardData): void {
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

export function renderWorkers(workersEl: HTMLElement, d: DashboardData): void {
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
      h('tbody', {}, ...d.workers.map(workerRow)),
    ),
  );
}

function workerRow(w: DashboardData['workers'][number]): HTMLElement {
  return h(
    'tr',
    {},
    h('td', {}, w.id),
    h(
      'td',
      {},
      h('span', { class: `tag ${w.local ? 'local' : 'remote'}` }, w.local ? 'this machine' : `remote: ${w.host}`),
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
  );
}
