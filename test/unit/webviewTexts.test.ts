import assert from 'node:assert/strict';
import type { AnalysisView, PreviewState } from '../../src/core/designer/protocol';
import type { DashboardData } from '../../src/extension/dashboard/protocol';
import { EMPTY_VIEW } from '../../src/extension/results/protocol';
import { counterIcon, etaText, shortUrl } from '../../media/dashboard/figures';
import { ago as designerAgo, bannerOf, clip, frameMessage, kb, matches, statusText } from '../../media/designer/text';
import { ago as monitorAgo, fmt, fmtRate } from '../../media/monitor/format';
import { cellClasses, labelOf, minWidthOf, templateOf, widthOf } from '../../media/results/columns';
import {
  countText,
  emptyText,
  fmtValue,
  isEmpty,
  latestRun,
  percentText,
  queryText,
  type Shown,
} from '../../media/results/text';

// The webviews' pure parts (issue 34: unit tests for the webview scripts): what the designer, the dashboard, the
// monitor and the Results view write about what they show, run here as they are, without a DOM. What the views
// draw with them is the UI tests' part (test/ui, test/integration/monitor.test.ts).

const NOW = Date.parse('2026-01-01T12:00:00Z');

function preview(over: Partial<PreviewState> = {}): PreviewState {
  return {
    file: '/t/task.yaml',
    restore: { uri: 'file:///t/task.yaml', rule: null },
    page: null,
    pageError: null,
    loading: null,
    choices: [],
    images: false,
    browser: false,
    sitemap: null,
    access: null,
    analysis: null,
    ...over,
  };
}

function analysis(over: Partial<AnalysisView> = {}): AnalysisView {
  return {
    stale: false,
    diagnostics: [],
    rule: { name: 'detail', auto: true, reason: 'match', names: ['detail'], fallback: false },
    items: [],
    problems: [],
    links: [],
    robotsPending: false,
    highlight: null,
    timings: { parseMs: 1, analyseMs: 2, highlightMs: 0, totalMs: 12.6 },
    ...over,
  };
}

const page = {
  url: 'https://a.test/p',
  finalUrl: 'https://a.test/p',
  status: 200,
  contentType: 'text/html',
  bytes: 2048,
  fetchedAt: new Date(NOW - 5 * 60_000).toISOString(),
  fromCache: true,
};

describe('webview texts: the designer (media/designer/text.ts)', () => {
  it('ago says just now under a minute, then minutes, hours and days; never in the future', () => {
    const at = (ms: number) => new Date(NOW - ms).toISOString();
    assert.equal(designerAgo(at(59_000), NOW), 'just now');
    assert.equal(designerAgo(at(-60_000), NOW), 'just now', 'a clock ahead of this one');
    assert.equal(designerAgo(at(90_000), NOW), '2 min ago');
    assert.equal(designerAgo(at(2 * 3_600_000), NOW), '2 h ago');
    assert.equal(designerAgo(at(3 * 86_400_000), NOW), '3 d ago');
  });

  it('kb, clip and matches', () => {
    assert.equal(kb(1023), '1023 B');
    assert.equal(kb(1536), '1.5 KB');
    assert.equal(kb(3 * 1024 * 1024), '3.0 MB');
    assert.equal(clip('abcdef', 6), 'abcdef');
    assert.equal(clip('abcdefg', 6), 'abcdef…');
    assert.equal(matches(1), '1 match');
    assert.equal(matches(0), '0 matches');
  });

  it('the status line names the request, the page, its cache, redirect, actions and rule', () => {
    const s = preview({
      loading: 'Fetching',
      page: {
        ...page,
        method: 'POST',
        body: 'x'.repeat(100),
        finalUrl: 'https://a.test/q',
        actions: ['scroll 3', 'click .more'],
      },
      access: 'logged in (main)',
      analysis: analysis(),
    });
    assert.equal(
      statusText(s, NOW),
      [
        'Fetching…',
        `POST ${'x'.repeat(80)}…`,
        'HTTP 200',
        '2.0 KB',
        'cached copy, fetched 5 min ago',
        'redirected to https://a.test/q',
        'actions: scroll 3; click .more',
        'logged in (main)',
        'rule detail (match)',
        'updated in 13 ms',
      ].join(' · '),
    );
    assert.equal(statusText(preview(), NOW), '');
  });

  it('the banner: the page error first, then the task file errors (stale or not), then warnings', () => {
    const error = { severity: 'error' as const, message: 'm', path: 'p', line: 1, column: 1 };
    assert.deepEqual(bannerOf(preview({ pageError: 'HTTP 500' })), { text: 'HTTP 500', error: true });
    assert.deepEqual(bannerOf(preview({ analysis: analysis({ diagnostics: [error, error] }) })), {
      text: 'The task file has 2 errors: see Problems.',
      error: true,
    });
    assert.deepEqual(bannerOf(preview({ analysis: analysis({ stale: true, diagnostics: [error] }) })), {
      text: 'The task file has 1 error (see Problems): showing what its last valid version extracts.',
      error: false,
    });
    assert.deepEqual(bannerOf(preview({ page: { ...page, warnings: ['a', 'b'] } })), {
      text: 'Warning: a\nWarning: b',
      error: false,
    });
    assert.deepEqual(bannerOf(preview({ page })), { text: '', error: false });
  });

  it('the frame message while there is no page, none once there is one', () => {
    assert.equal(frameMessage(preview({ loading: 'Fetching' })), 'Fetching…');
    assert.equal(frameMessage(preview({ pageError: 'refused' })), 'refused');
    assert.equal(frameMessage(preview()), 'Pick a page: a start URL, a cached page, or any URL.');
    assert.equal(frameMessage(preview({ page, loading: 'Fetching' })), null);
  });
});

describe('webview texts: the dashboard (media/dashboard/figures.ts)', () => {
  const data = (eta: Partial<DashboardData['eta']>, run: Partial<NonNullable<DashboardData['run']>> = {}) =>
    ({
      eta: { state: 'ok', seconds: 125, completionRate: 2.25, discoveryRate: 1, ...eta },
      run: { id: 'r1', state: 'running', phase: 'p', startedAt: 0, finishedAt: null, elapsedMs: 0, ...run },
      queue: { waiting: 3, active: 1, delayed: 0, total: 4, text: '' },
    }) as unknown as DashboardData;

  it('the ETA counter says the time left while the crawl goes, and why there is none otherwise', () => {
    assert.deepEqual(etaText(data({})), ['2m 5s', 'done 2.3/s · found 1.0/s']);
    assert.deepEqual(etaText(data({ state: 'no-worker' })), [
      'no worker',
      '4 in the queue and no worker running: Start Crawl resumes the run',
    ]);
    assert.deepEqual(etaText(data({ state: 'drained' })), ['drained', 'nothing left in the queue']);
    assert.deepEqual(etaText(data({ state: 'stopped' })), ['stopped', 'stopped']);
    assert.deepEqual(etaText(data({ state: 'estimating' })), ['…', 'estimating from the first seconds']);
  });

  it("a counter's icon by its label, and a URL shown by its path", () => {
    assert.equal(counterIcon('Failed'), 'error');
    assert.equal(counterIcon('Downloaded'), 'cloud-download');
    assert.equal(counterIcon('Fetched'), 'check');
    assert.equal(shortUrl('https://a.test/books/1?x=2#top'), '/books/1?x=2');
    assert.equal(shortUrl('not a url'), 'not a url');
  });
});

describe('webview texts: the monitor (media/monitor/format.ts)', () => {
  it('counts, rates and ages', () => {
    assert.equal(fmt(1234567), '1,234,567');
    assert.equal(fmtRate(2.25), '2.3');
    assert.equal(monitorAgo(4_400), '4 s ago');
    assert.equal(monitorAgo(150_000), '3 min ago');
    assert.equal(monitorAgo(5_400_000), '1.5 h ago');
  });
});

describe('webview texts: the Results view (media/results/columns.ts, text.ts)', () => {
  const shown = (over: Partial<Shown> = {}): Shown => ({
    view: EMPTY_VIEW,
    total: 0,
    generation: 1,
    stored: 0,
    running: false,
    runs: { runs: [], shown: 'all' },
    changes: { runs: [], shown: null, latest: null },
    ...over,
  });
  const runs = {
    runs: [
      { id: 'r1', items: 5, firstFetchedAt: 1 },
      { id: 'r2', items: 7, firstFetchedAt: 2 },
    ],
    shown: 'r2',
  };

  it('columns: labels, widths, the grid template and the width under which it scrolls', () => {
    assert.equal(labelOf('_url'), 'source URL');
    assert.equal(labelOf('title'), 'title');
    assert.equal(widthOf('_url'), 'minmax(220px, 2fr)');
    assert.equal(widthOf('_rule'), '90px');
    assert.equal(widthOf('price'), 'minmax(120px, 1fr)');
    assert.equal(templateOf(['_fetched_at', 'price']), '160px minmax(120px, 1fr)');
    assert.equal(
      minWidthOf(['_url', '_fetched_at', '_rule', '_run', '_change', 'a', 'b']),
      220 + 160 + 90 + 110 + 100 + 240,
    );
    assert.deepEqual(cellClasses('_url', '', true), ['cell', 'empty', 'url']);
    assert.deepEqual(cellClasses('price', '-12.5', true), ['cell', 'num']);
    assert.deepEqual(cellClasses('price', '12', false), ['cell'], 'a row not loaded yet is neither empty nor a number');
  });

  it('the empty table says why: nothing stored yet, nothing matching, no history', () => {
    assert.equal(emptyText(shown({ total: 3 })), '');
    assert.equal(emptyText(shown({ generation: -1 })), '', 'no count yet');
    assert.equal(
      emptyText(shown({ running: true })),
      'No items stored yet — they appear here as the crawl stores them.',
    );
    assert.equal(emptyText(shown()), 'No items stored for this task yet. Start the crawl to fill it.');
    assert.equal(emptyText(shown({ stored: 4 })), 'No item matches these filters.');
    const changes = { ...EMPTY_VIEW, itemType: 'book', changes: 'all' as const };
    assert.match(emptyText(shown({ view: changes })), /^No run of this task has item history yet/);
    assert.equal(
      emptyText(shown({ view: changes, changes: { runs: [], shown: 'r2', latest: 'r2' } })),
      'Run r2 changed no book item.',
    );
  });

  it('the count, its tooltip and the status line follow the filters, the run and the sort', () => {
    assert.deepEqual(countText(shown({ generation: -1 })), { text: 'loading…', title: '' });
    assert.deepEqual(countText(shown({ total: 1, stored: 1 })), { text: '1 item', title: '' });
    const filtered = { ...EMPTY_VIEW, filters: { title: 'x' } };
    assert.deepEqual(countText(shown({ view: filtered, total: 2, stored: 1200, runs })), {
      text: '2 of 1,200 items',
      title: '2 items of run r2 matching the filters; 1,200 in all runs',
    });
    assert.equal(latestRun(runs), 'r2');
    assert.equal(queryText(shown({ runs })), 'run r2 (latest) · in storage order');
    const sorted = { ...EMPTY_VIEW, sort: { field: '_fetched_at', descending: true } };
    assert.equal(
      queryText(shown({ view: sorted, runs: { ...runs, shown: 'all' } })),
      'all 2 runs · sorted by fetched at ↓',
    );
  });

  it("a value in the row detail, whether it counts as empty, and a quality bar's percent", () => {
    assert.equal(fmtValue(null), '');
    assert.equal(fmtValue('a'), 'a');
    assert.equal(fmtValue({ a: 1 }), '{\n  "a": 1\n}');
    assert.ok(isEmpty(' ') && isEmpty([]) && isEmpty(undefined));
    assert.ok(!isEmpty(0) && !isEmpty('x') && !isEmpty([0]));
    assert.equal(percentText(0), '0');
    assert.equal(percentText(0.25), '0.3');
    assert.equal(percentText(42.4), '42');
  });
});
