import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { dashboardData, downsample, WorkerRates } from '../../src/extension/dashboard/data';
import { crawlEndMessage, crawlFinishedMessage } from '../../src/run/endMessage';
import {
  describeAttempts,
  describeQueue,
  finishedPages,
  groupLabel,
  queuedJobs,
  RATE_WINDOW_MS,
  rateOver,
  rateWindowText,
  recentWindowMs,
  runElapsedMs,
  waitingPages,
  WAITING_GROUPS,
} from '../../src/observe/figures';
import { runInfoOf } from '../../src/frontier/partitions';
import { JOB_STATES } from '../../src/extension/explorer/jobStates';
import { parseDashboardMessage } from '../../src/extension/dashboard/messages';
import { benchmarkResults, seedItems } from '../../src/extension/results/bench';
import { parseResultsMessage } from '../../src/extension/results/messages';
import type { HealthSnapshot } from '../../src/observe/health';
import { parseTask } from '../../src/core/task/parse';
import { SqliteStore } from '../../src/store';

// The host side of the results and dashboard webviews that needs no VS Code: what messages are accepted, how a
// health snapshot becomes dashboard data, and the results benchmark hook on a small store.

const view = {
  itemType: 'book',
  filters: { title: 'x' },
  sort: { field: 'price', descending: true },
  hidden: [],
  showQuality: false,
};

describe('webview messages are validated before anything happens', () => {
  it('accepts the results messages in their exact shape', () => {
    assert.ok(parseResultsMessage({ type: 'ready' }));
    assert.ok(parseResultsMessage({ type: 'ready', view }));
    assert.ok(parseResultsMessage({ type: 'query', view, seq: 1 }));
    assert.ok(parseResultsMessage({ type: 'rows', generation: 3, offset: 100, limit: 100 }));
    assert.ok(parseResultsMessage({ type: 'export', format: 'csv' }));
    assert.ok(parseResultsMessage({ type: 'quality', show: true, seq: 3 }));
    assert.ok(parseResultsMessage({ type: 'columns', hidden: ['_key'], seq: 4 }));
    assert.ok(parseResultsMessage({ type: 'openUrl', offset: 4 }));
    assert.ok(
      parseResultsMessage({ type: 'query', view: { ...view, changes: 'removed', changeRun: 'latest' }, seq: 2 }),
    );
  });

  it('refuses unknown types, extra fields, wrong types and unbounded sizes', () => {
    for (const bad of [
      null,
      'ready',
      { type: 'command', command: 'workbench.action.terminal.new' },
      { type: 'openUrl', offset: 1, url: 'file:///etc/passwd' },
      { type: 'openUrl', offset: -1 },
      { type: 'openUrl', offset: 1.5 },
      { type: 'rows', generation: 0, offset: 0, limit: 100_000 },
      { type: 'export', format: 'csv', path: '/etc/x' },
      { type: 'query', view: { ...view, changes: 'everything' }, seq: 1 },
      { type: 'query', view: { ...view, changes: undefined }, seq: 1 },
      { type: 'query', view: { ...view, changes: 'all', changeRun: 'x'.repeat(201) }, seq: 1 },
      { type: 'export', format: 'sh' },
      { type: 'query', view: { ...view, filters: { a: 'x'.repeat(10_000) } }, seq: 1 },
      { type: 'query', view: { ...view, sort: { field: 'a', descending: 'yes' } }, seq: 1 },
      { type: 'query', view: { ...view, extra: 1 }, seq: 1 },
      { type: 'query', view },
      { type: 'query', view, seq: 0 },
      { type: 'query', view, seq: '1' },
      { type: 'quality', show: true },
      { type: 'columns', hidden: ['_key'] },
      { type: 'columns', hidden: '_key', seq: 1 },
      { type: 'columns', hidden: ['x'.repeat(201)], seq: 1 },
    ]) {
      assert.equal(parseResultsMessage(bad), null, JSON.stringify(bad)?.slice(0, 80));
    }
  });

  it('refuses dashboard messages that could name arbitrary things', () => {
    assert.ok(parseDashboardMessage({ type: 'retryGroup', group: 'http-503' }));
    assert.equal(parseDashboardMessage({ type: 'retryGroup', group: 'x; DROP' }), null);
    assert.equal(parseDashboardMessage({ type: 'openUrl', url: 'http://a/', extra: 1 }), null);
    assert.equal(parseDashboardMessage({ type: 'openResults', file: '/etc/passwd' }), null);
    assert.ok(parseDashboardMessage({ type: 'openChanges' }));
    assert.equal(parseDashboardMessage({ type: 'openChanges', run: 'x' }), null);
  });
});

describe('dashboard data', () => {
  const task = parseTask(
    'name: t\nstart: [http://a.test/]\nscope: { maxPages: 100 }\nrules:\n  - name: r\n',
    '/tmp/t.crawl.yaml',
  ).task!;
  const s = (t: number, done: number, waiting: number) => ({
    t,
    done,
    failed: 0,
    skipped: 0,
    items: done * 2,
    enqueued: 50,
    bytes: 0,
    waiting,
    active: 1,
    delayed: 0,
  });
  const health: HealthSnapshot = {
    task: 't',
    at: 20_000,
    run: { run: 'r1', state: 'running', startedAt: 0, finishedAt: null },
    phase: { kind: 'running', driver: { owner: 'o', front: 'VS Code', host: 'h', pid: 1, since: 0 }, workers: 1 },
    stats: {
      enqueued: 50,
      done: 20,
      failed: 3,
      items: 40,
      problems: 0,
      bytes: 1000,
      duplicates: 5,
      nonHtml: 0,
      sitemaps: 0,
      unchanged: 0,
      unchangedItems: 0,
      skipped: { robots: 2, limit: 4 },
      failures: { 'http-503': 2, timeout: 1 },
      dropped: {},
    },
    counts: { frontier: 0, waiting: 20, prioritized: 9, active: 1, delayed: 2, completed: 22, failed: 3 },
    isPaused: false,
    history: [s(0, 0, 50), s(10_000, 10, 39), s(20_000, 20, 29)],
    failures: [
      {
        group: 'http-503',
        count: 2,
        jobs: 2,
        urls: ['http://a.test/x'],
        pages: [{ url: 'http://a.test/x', message: 'HTTP 503 Service Unavailable', attempts: 3, at: 19_000 }],
      },
    ],
    skipped: [{ reason: 'robots', count: 2, urls: [] }],
    hosts: [],
    workers: [
      {
        id: 'h:1',
        pid: 1,
        host: 'h',
        tasks: ['t'],
        concurrency: 4,
        started: 0,
        lastSeen: 19_000,
        processed: 20,
        failed: 0,
      },
    ],
  };

  it('derives rates, ETA, labels and counters from a snapshot', () => {
    const d = dashboardData(task, health, new WorkerRates(), 'h');
    // The first interval's rate from the history's first sample (observe/metrics.ts rateSeries).
    assert.deepEqual(d.series.pages, [1, 1, 1]);
    assert.deepEqual(d.series.t, [0, 10, 20]);
    assert.equal(d.eta.state, 'ok');
    assert.equal(d.failures[0]!.label, 'HTTP 503');
    assert.equal(d.counters.find((c) => c.label === 'Skipped')!.value, 6);
    assert.equal(d.workers[0]!.local, true);
    assert.equal(d.workers[0]!.stale, false);
    assert.equal(d.counters.find((c) => c.label === 'Pages done')!.detail, undefined);
    // Issue 32, item 7: the run's dropped links on the dashboard, by reason, a repeat not counted.
    const drops = dashboardData(
      task,
      { ...health, stats: { ...health.stats!, dropped: { offsite: 30, depth: 2, repeat: 9 } } },
      new WorkerRates(),
      'h',
    );
    assert.deepEqual(
      drops.counters.find((c) => c.label === 'Links dropped'),
      { label: 'Links dropped', value: 32, detail: 'offsite: 30, depth: 2' },
    );
    const recrawl = dashboardData(
      task,
      { ...health, stats: { ...health.stats!, nonHtml: 1, unchanged: 12, unchangedItems: 30 } },
      new WorkerRates(),
      'h',
    );
    assert.equal(
      recrawl.counters.find((c) => c.label === 'Pages done')!.detail,
      '1 not HTML · 12 unchanged (304)',
      'a conditional re-crawl counts its unchanged pages',
    );
  });

  it('computes a worker rate from two heartbeats and downsamples long series', () => {
    const rates = new WorkerRates();
    const w = health.workers[0]!;
    assert.equal(rates.rate(w), null);
    assert.equal(rates.rate({ ...w, lastSeen: w.lastSeen + 5000, processed: w.processed + 50 }), 10);
    const n = 5000;
    const big = downsample({
      t: Array.from({ length: n }, (_, i) => i),
      pages: Array(n).fill(2),
      items: Array(n).fill(1),
      depth: Array(n).fill(3),
      discovered: Array(n).fill(0),
    });
    assert.equal(big.t.length, 900);
    assert.ok(big.pages.every((v) => v === 2));
  });
});

// Issue 23, item 4: one source of truth per figure.
describe('figures every view shows the same way', () => {
  const stats = {
    enqueued: 60,
    done: 40,
    failed: 2,
    items: 80,
    problems: 0,
    bytes: 0,
    duplicates: 0,
    nonHtml: 0,
    sitemaps: 0,
    unchanged: 0,
    unchangedItems: 0,
    skipped: { robots: 5, limit: 7 },
    failures: {},
    dropped: { depth: 12 },
  };

  it("counts a worker's failed pages in its rate, as the status bar counts them", () => {
    // A worker whose pages all failed showed "0.0 jobs/s" beside a status bar at 3.2 p/s.
    const rates = new WorkerRates();
    const w = {
      id: 'h:2',
      pid: 2,
      host: 'h',
      tasks: ['t'],
      concurrency: 4,
      started: 0,
      lastSeen: 10_000,
      processed: 0,
      failed: 0,
    };
    rates.rate(w);
    assert.equal(rates.rate({ ...w, lastSeen: 15_000, failed: 16 }), 3.2);
  });

  it('names the queue and the finished pages once', () => {
    const c = { frontier: 0, waiting: 2, prioritized: 0, active: 0, delayed: 11, completed: 5, failed: 1 };
    assert.equal(queuedJobs(c), 13, 'the status bar\'s "queue N" counts the delayed jobs the explorer lists');
    assert.equal(describeQueue(c), '2 waiting · 0 active · 11 delayed');
    // Pages waiting in the compact frontier are not jobs yet, and wait all the same (issue 19).
    assert.equal(queuedJobs({ ...c, frontier: 40 }), 53);
    assert.equal(describeQueue({ ...c, frontier: 40 }), '42 waiting · 0 active · 11 delayed');
    assert.deepEqual(finishedPages(stats), { done: 40, skipped: 5, failed: 2, total: 47 });
  });

  it('names "waiting" once: the explorer\'s groups under a queue add up to its "N waiting", and none else is called waiting (issue 32)', () => {
    const c = { frontier: 28, waiting: 0, prioritized: 3, active: 1, delayed: 2, completed: 5, failed: 1 };
    assert.equal(describeQueue(c), '31 waiting · 1 active · 2 delayed');
    assert.equal(
      WAITING_GROUPS.reduce((n, g) => n + c[g], 0),
      waitingPages(c),
    );
    // The row said "28 waiting" beside a group labelled `waiting` that said 0: BullMQ's list is labelled "ready".
    const labels = JOB_STATES.map(groupLabel);
    assert.ok(!labels.includes('waiting'), labels.join(', '));
    assert.ok(WAITING_GROUPS.every((g) => (JOB_STATES as readonly string[]).includes(g)));
  });

  it('never shows more attempts than allowed as "attempt N/M" (issue 32)', () => {
    assert.equal(describeAttempts(0, 3), 'attempt 1/3');
    assert.equal(describeAttempts(3, 3), 'attempt 3/3');
    assert.equal(describeAttempts(4, 3), '4 attempts (3 allowed)');
    assert.equal(describeAttempts(2, undefined), 'attempt 2');
    // Retried by hand: its attempts started again, and it says why.
    assert.equal(describeAttempts(1, 3, 1), 'attempt 1/3 (retried by you)');
    assert.equal(describeAttempts(2, 3, 2), 'attempt 2/3 (retried by you 2×)');
  });

  it("leaves paused, interrupted and stopped time out of a run's duration (issue 32)", () => {
    const run = runInfoOf({ run: 'r1', state: 'stopped', startedAt: '1000', finishedAt: '11000', pausedMs: '3000' })!;
    assert.equal(runElapsedMs(run, 99_000), 7_000, 'stopped at 11 s, paused 3 s');
    const idle = runInfoOf({ run: 'r1', state: 'running', startedAt: '1000', pausedMs: '1000', idleSince: '6000' })!;
    assert.equal(runElapsedMs(idle, 20_000), 4_000, 'interrupted at 6 s: the time since is not counted');
  });

  it('keeps the elapsed time of a reopened run going', () => {
    // A retry or an enqueue after the end reopens a run: its old finishedAt froze the dashboard's elapsed time.
    const run = runInfoOf({ run: 'r1', state: 'running', startedAt: '1000', finishedAt: '5000' })!;
    assert.equal(run.finishedAt, null);
    assert.equal(runInfoOf({ run: 'r1', state: 'finished', startedAt: '1000', finishedAt: '5000' })!.finishedAt, 5000);
    const task = parseTask('name: t\nstart: [http://a.test/]\nrules:\n  - name: r\n', '/tmp/t.crawl.yaml').task!;
    const base = {
      task: 't',
      stats,
      counts: { frontier: 0, waiting: 0, prioritized: 0, active: 0, delayed: 0, completed: 0, failed: 0 },
      isPaused: false,
      phase: { kind: 'running' as const, driver: null, workers: 1 },
      history: [],
      failures: [],
      skipped: [],
      hosts: [],
      workers: [],
    };
    const at = (now: number) =>
      dashboardData(
        task,
        {
          ...base,
          at: now,
          run: { run: 'r1', state: run.state, startedAt: run.startedAt, finishedAt: run.finishedAt },
        },
        new WorkerRates(),
        'h',
      ).run!.elapsedMs;
    assert.equal(at(10_000), 9_000);
    assert.equal(at(11_000), 10_000);
  });

  it('takes the recent rate over the last 30 s, or early in a run over the last half of the time since its first page finished (issue 32)', () => {
    // Nothing finished for 4 s (workers starting), then 10 pages a second.
    const pts = [0, 1_000, 2_000, 3_000, 4_000]
      .map((t) => ({ t, n: 0 }))
      .concat(Array.from({ length: 8 }, (_, i) => ({ t: 5_000 + i * 1_000, n: 10 * (i + 1) })));
    assert.equal(recentWindowMs(pts), 4_000, 'half of the 8 s since the last point before the first page');
    assert.equal(rateOver(pts, recentWindowMs(pts)), 10, 'the pace, not the ramp');
    const long = Array.from({ length: 100 }, (_, i) => ({ t: i * 1_000, n: i * 3 }));
    assert.equal(recentWindowMs(long), RATE_WINDOW_MS, 'a run under way: the named window');
    assert.equal(rateWindowText('recent', recentWindowMs(long)), 'last 30 s');
    assert.equal(rateWindowText('run', null), 'average over the run');
  });

  it('says in the finish message which limit cut the crawl, with its figures', () => {
    const task = parseTask(
      'name: t\nstart: [http://a.test/]\nscope: { maxPages: 40, maxDepth: 3 }\nrules:\n  - name: r\n',
      '/tmp/t.crawl.yaml',
    ).task!;
    assert.equal(
      crawlFinishedMessage(task, stats),
      "Crawl 't' finished: 40 pages, 80 items, 5 skipped, 2 failed, 12 links dropped (depth: 12). scope.maxPages (40) stopped it: 7 more links were not crawled. scope.maxDepth (3) cut it: 12 links were deeper.",
    );
    assert.equal(
      crawlFinishedMessage(task, { ...stats, skipped: {}, dropped: {} }),
      "Crawl 't' finished: 40 pages, 80 items, 2 failed.",
    );
    // Issue 32, item 7: the run's dropped links by reason, in every end message (a repeat is not a dropped link).
    const drops = { ...stats, skipped: {}, dropped: { offsite: 1200, scheme: 3, repeat: 40 } };
    assert.equal(
      crawlFinishedMessage(task, drops),
      "Crawl 't' finished: 40 pages, 80 items, 2 failed, 1,203 links dropped (offsite: 1,200, scheme: 3).",
    );
    assert.match(
      crawlEndMessage(task, { outcome: 'stopped', status: { stats: drops } }),
      /2 failed, 1,203 links dropped \(offsite: 1,200, scheme: 3\)\. Start Crawl begins/,
    );
  });

  it('says how a crawl ended in one message: stopped and interrupted are never "finished" (issue 32)', () => {
    const task = parseTask('name: t\nstart: [http://a.test/]\nrules:\n  - name: r\n', '/tmp/t.crawl.yaml').task!;
    const plain = { ...stats, skipped: {}, dropped: {} };
    assert.equal(
      crawlEndMessage(task, { outcome: 'stopped', status: { stats: plain } }),
      "Crawl 't' stopped: 40 pages, 80 items, 2 failed. Start Crawl begins a new run from the start URLs.",
    );
    assert.equal(
      crawlEndMessage(task, { outcome: 'interrupted', status: { stats: plain } }),
      "Crawl 't' interrupted: 40 pages, 80 items, 2 failed. Start Crawl resumes it where it left off.",
    );
    assert.equal(
      crawlEndMessage(task, { outcome: 'finished', status: { stats: plain } }),
      crawlFinishedMessage(task, plain),
    );
  });
});

describe('results benchmark hook', function () {
  this.timeout(60_000);
  it('measures time to first rows and paging on a seeded store', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cs-rbench-'));
    const store = new SqliteStore(join(dir, 'b.sqlite'));
    await store.open();
    try {
      await seedItems(store, 3000);
      const r = await benchmarkResults(store, { scrollPages: 10, jumps: 5 });
      assert.equal(r.items, 3000);
      assert.equal(r.scroll.pages, 10);
      assert.ok(r.filteredMatches > 0 && r.filteredMatches < 3000);
      assert.ok(r.firstRowsMs >= 0 && r.qualityMs >= 0);
    } finally {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
