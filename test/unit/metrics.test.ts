import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { describeGroup, failureGroupOf } from '../../src/observe/failures';
import { taskKeys } from '../../src/frontier/keys';
import { countFailed, countSkipped, uncountFailed } from '../../src/frontier/outcomes';
import {
  estimateEta,
  mergeTiers,
  metricsKeys,
  rateSeries,
  readHistory,
  readHostTally,
  recordSample,
  TIERS,
  type MetricSample,
} from '../../src/observe/metrics';
import { compileFilters, ItemCache, ItemView, QualityTracker, sortKeyOf, viewAsStore } from '../../src/store/query';
import { ResultsSource } from '../../src/extension/results/source';
import { exportItems, SqliteStore } from '../../src/store';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import type { StoredItem } from '../../src/store/types';
import { startRedis, type RedisServer } from '../support/services';

// The dashboard's engine side (metric samples in Redis, rates, ETA, failure groups) and the results view's
// query layer (filters, sorts, field quality, filtered export) on a real SQLite store.

const sample = (t: number, o: Partial<MetricSample> = {}): MetricSample => ({
  t,
  done: 0,
  failed: 0,
  skipped: 0,
  items: 0,
  enqueued: 0,
  bytes: 0,
  waiting: 0,
  active: 0,
  delayed: 0,
  ...o,
});

describe('metrics: rates and ETA', () => {
  it('derives per-second rates from cumulative samples, never negative', () => {
    const r = rateSeries([
      sample(0, { done: 0, items: 0 }),
      sample(2000, { done: 10, items: 4, waiting: 5 }),
      sample(3000, { done: 2 }),
    ]);
    // The first interval's rate stands at its start too, with the start's queue depth.
    assert.deepEqual(
      r.map((p) => [p.t, p.pagesPerSec, p.itemsPerSec, p.queueDepth]),
      [
        [0, 5, 2, 0],
        [2000, 5, 2, 5],
        [3000, 0, 0, 0],
      ],
      'a counter reset is not a negative rate',
    );
  });

  it('charts a run shorter than the sampling step: its first sample and its last make a line of two points', () => {
    const r = rateSeries([sample(0, { done: 0, waiting: 1 }), sample(800, { done: 107 })]);
    assert.deepEqual(
      r.map((p) => [p.t, p.pagesPerSec]),
      [
        [0, 133.75],
        [800, 133.75],
      ],
    );
    assert.deepEqual(rateSeries([sample(0, { done: 0 })]), [], 'one sample has no rate');
  });

  it('estimates the drain time from what is left and the recent rate, and gives none without a rate (issue 32)', () => {
    // 5 pages/s over the last 5 s, 70 pending: 14 s, whatever discovery does.
    const s = [
      sample(0, { done: 0, enqueued: 100, waiting: 100 }),
      sample(5_000, { done: 25, enqueued: 120, waiting: 70 }),
    ];
    const e = estimateEta(s, null);
    assert.equal(e.state, 'ok');
    assert.equal(e.completionRate, 5);
    assert.equal(e.seconds, 14);
    assert.equal(e.seconds * e.completionRate, e.pending, 'ETA × pages/s = what is left');
    // Discovery close to completion used to give pending / (c - d): here 70 / 0.2 = 350 s for a queue of 70 at 5/s.
    const discovering = [
      sample(0, { enqueued: 100, waiting: 100 }),
      sample(5_000, { done: 25, enqueued: 124, waiting: 70 }),
    ];
    assert.equal(estimateEta(discovering, null).seconds, 14);
    assert.equal(estimateEta([sample(0, { waiting: 0 })], null).state, 'drained');
    assert.equal(
      estimateEta([sample(0, { done: 3, waiting: 5 }), sample(10_000, { done: 3, waiting: 5 })], null).state,
      'stalled',
    );
    assert.equal(
      estimateEta([sample(0, { done: 3, waiting: 5 }), sample(10_000, { done: 3, waiting: 5 })], null).seconds,
      null,
      'no ETA without a rate',
    );
    // Nothing finished yet (workers starting): no rate yet, not a stall.
    assert.equal(estimateEta([sample(0, { waiting: 5 }), sample(10_000, { waiting: 5 })], null).state, 'estimating');
    // What is left is the queue now when given (every view's "queue N"), not the last sample's.
    assert.equal(estimateEta(s, 50).seconds, 10);
    assert.equal(estimateEta([sample(0, { waiting: 5 })], null).state, 'estimating');
  });

  it('merges the coarse tier before the fine one', () => {
    const m = mergeTiers([sample(100), sample(101)], [sample(0), sample(50), sample(100)]);
    assert.deepEqual(
      m.map((s) => s.t),
      [0, 50, 100, 101],
    );
  });
});

describe('metrics: failure groups', () => {
  it('recovers the group of a failed job from its message', () => {
    assert.equal(failureGroupOf('HTTP 503 for http://a/x'), 'http-503');
    assert.equal(failureGroupOf('timed out fetching http://a/x'), 'timeout');
    assert.equal(failureGroupOf('cannot resolve the host of http://nx.invalid/ (ENOTFOUND)'), 'dns');
    assert.equal(failureGroupOf('network error fetching http://a/: ECONNRESET'), 'network');
    assert.equal(failureGroupOf('http://a/x is over the 100-byte limit'), 'too-large');
    // The message worker/sitemapJob.ts fails a sitemap with when Redis failed over under it.
    assert.equal(
      failureGroupOf('Redis failed over while the entries of http://a/sitemap.xml were queued: it is read again'),
      'failover',
    );
    // As the worker counts them (worker/runtime.ts: failed:stalled; access.ts: failed:login), so the groups match the counters.
    assert.equal(failureGroupOf('job stalled more than allowable limit'), 'stalled');
    // worker/browser/actions.ts: a step of `browser.actions` failed.
    assert.equal(failureGroupOf('browser.actions[1] (click button.more): timed out after 1000 ms'), 'action');
    assert.equal(failureGroupOf('login to http://a/login failed: HTTP 403'), 'login');
    assert.equal(failureGroupOf(undefined), 'error');
    assert.equal(describeGroup('http-404'), 'HTTP 404');
    assert.equal(describeGroup('robots'), 'robots.txt');
  });
});

describe('metrics: samples in Redis', function () {
  this.timeout(20_000);
  let server: RedisServer;
  let redis: Redis;
  before(async () => {
    server = await startRedis();
    redis = new Redis(server.url);
  });
  after(async () => {
    redis?.disconnect();
    await server?.stop();
  });

  it('takes at most one sample a second across samplers, bounded and readable after a restart', async () => {
    const k = taskKeys('m1');
    await redis.hset(k.meta, { run: 'r1', state: 'running' });
    await redis.hset(k.stats('r1'), {
      done: 3,
      failed: 1,
      items: 2,
      enqueued: 10,
      'skipped:robots': 1,
      'skipped:limit': 5,
    });
    await redis.rpush(k.bull.wait, 'a', 'b');
    const first = await recordSample(redis, 'm1', 1_000_000);
    assert.ok(first);
    assert.equal(first.skipped, 1, 'links over maxPages are not jobs');
    assert.equal(first.waiting, 2);
    assert.equal(await recordSample(redis, 'm1', 1_000_100), null, 'a second sampler within the second is refused');
    await redis.del(metricsKeys('m1', 'r1').tick);
    await recordSample(redis, 'm1', 1_001_000);
    const h = await readHistory(redis, 'm1', 'r1');
    assert.deepEqual(
      h.map((s) => s.t),
      [1_000_000, 1_001_000],
    );
    assert.ok((await redis.pttl(metricsKeys('m1', 'r1').tier('fine'))) > 0, 'metrics expire');
  });

  it("ends a run's history with its driver's final sample, however soon after the last; nobody samples it after", async () => {
    const k = taskKeys('m4');
    await redis.hset(k.meta, { run: 'r4', state: 'running' });
    await redis.hset(k.stats('r4'), { done: 0, enqueued: 1 });
    assert.ok(await recordSample(redis, 'm4', 3_000_000));
    // A crawl shorter than the step: done 0.4 s after its first sample, within the tick and the tiers' spacing.
    await redis.hset(k.stats('r4'), { done: 107, enqueued: 108 });
    assert.equal(await recordSample(redis, 'm4', 3_000_400), null, 'an ordinary sample waits for the step');
    const last = await recordSample(redis, 'm4', 3_000_400, { final: true });
    assert.equal(last?.done, 107);
    for (const tier of TIERS)
      assert.deepEqual(
        (await redis.lrange(metricsKeys('m4', 'r4').tier(tier.name), 0, -1)).map((x) => JSON.parse(x).t),
        [3_000_000, 3_000_400],
        tier.name,
      );
    // A final sample that says what the last one says adds nothing: the chart would end on a rate of 0.
    await redis.hset(k.meta, { state: 'running' });
    assert.ok(await recordSample(redis, 'm4', 3_000_450, { final: true }));
    assert.equal(await redis.llen(metricsKeys('m4', 'r4').tier('fine')), 2);
    // Ended: a view that stays open (the monitor, a dashboard) no longer adds samples of nothing happening.
    for (const state of ['finished', 'stopped']) {
      await redis.hset(k.meta, { state });
      await redis.del(metricsKeys('m4', 'r4').tick);
      assert.equal(await recordSample(redis, 'm4', 3_060_000), null, state);
    }
    assert.deepEqual(
      (await readHistory(redis, 'm4', 'r4')).map((x) => [x.t, x.done]),
      [
        [3_000_000, 0],
        [3_000_400, 107],
      ],
    );
  });

  it('counts skipped and failed jobs for the run and per host, with the recent URLs of each skip reason', async () => {
    await countSkipped(redis, 'm2', 'r2', { id: 'j1', url: 'http://a.test/1' }, 'robots.txt');
    await countSkipped(redis, 'm2', 'r2', { id: 'j2', url: 'http://a.test/2' }, 'robots.txt');
    // Written again (a reply lost to a cut connection): counted once.
    await countSkipped(redis, 'm2', 'r2', { id: 'j2', url: 'http://a.test/2' }, 'robots.txt');
    await countFailed(redis, 'm2', 'r2', { id: 'j3', url: 'http://b.test/3' }, 'http-404');
    await countFailed(redis, 'm2', 'r2', { id: 'j4', url: 'not a url' }, 'error');
    // Written again (a reply lost to a cut connection): counted once.
    await countFailed(redis, 'm2', 'r2', { id: 'j3', url: 'http://b.test/3' }, 'http-404');
    assert.deepEqual(await readHostTally(redis, 'm2', 'r2'), [
      { host: 'a.test', done: 0, skipped: 2, failed: 0 },
      { host: 'b.test', done: 0, skipped: 0, failed: 1 },
    ]);
    assert.deepEqual(await redis.lrange(metricsKeys('m2', 'r2').skippedUrls('robots'), 0, -1), [
      'http://a.test/2',
      'http://a.test/1',
    ]);
    // The run's counters, in the same call; a job whose URL has no host is counted for the run all the same.
    assert.deepEqual(await redis.hgetall(taskKeys('m2').stats('r2')), {
      'skipped:robots': '2',
      failed: '2',
      'failed:http-404': '1',
      'failed:error': '1',
    });
    // The tally lives as long as the run's samples: each sample renews it.
    await redis.hset(taskKeys('m2').meta, { run: 'r2', state: 'running' });
    assert.equal(await redis.pttl(metricsKeys('m2', 'r2').hosts), -1);
    await recordSample(redis, 'm2', 2_000_005);
    assert.ok((await redis.pttl(metricsKeys('m2', 'r2').hosts)) > 0, 'the tally expires with the metrics');
  });

  it('counts a failed job once however often it is sent, and again after a retry by hand', async () => {
    const job = { id: 'j9', url: 'http://c.test/9' };
    const failed = async () => Number(await redis.hget(taskKeys('m3').stats('r3'), 'failed'));
    await countFailed(redis, 'm3', 'r3', job, 'http-500');
    await countFailed(redis, 'm3', 'r3', job, 'http-500');
    assert.equal(await failed(), 1);
    await uncountFailed(redis, 'm3', 'r3', job, 'http-500');
    assert.equal(await failed(), 0);
    // Retried by hand, it failed again: counted again, once.
    await countFailed(redis, 'm3', 'r3', job, 'http-500');
    await countFailed(redis, 'm3', 'r3', job, 'http-500');
    assert.equal(await failed(), 1);
    assert.deepEqual(await readHostTally(redis, 'm3', 'r3'), [{ host: 'c.test', done: 0, skipped: 0, failed: 1 }]);
    assert.ok((await redis.pttl(metricsKeys('m3', 'r3').failedJobs)) > 0, 'the set expires with the metrics');
  });
});

describe('query: filters, sorts, quality, filtered export', function () {
  this.timeout(30_000);
  let dir: string;
  let store: SqliteStore;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'cs-query-'));
    store = new SqliteStore(join(dir, 'q.sqlite'));
    await store.open();
    const items = Array.from({ length: 500 }, (_, i) => {
      const data = { title: `Book ${i}`, price: String((i * 7) % 100), broken: '', tags: i % 2 ? ['x'] : [] };
      return {
        type: 'book',
        key: `k${i}`,
        json: JSON.stringify(data),
        fields: Object.keys(data),
        url: `http://s.test/b/${i}.html`,
        rule: 'book',
        run: 'r',
        fetchedAt: 1000 + i,
      };
    });
    await store.writeBatch([], items, 'ignore');
  });
  after(async () => {
    await store?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('compiles substring, exact, empty and negated filters', () => {
    const item = { data: { a: 'Hello', b: '', c: ['x', 'y'] }, key: 'k', url: 'u', rule: 'r' } as unknown as StoredItem;
    assert.ok(compileFilters([{ field: 'a', text: 'ell' }])(item));
    assert.ok(!compileFilters([{ field: 'a', text: '=ell' }])(item));
    assert.ok(compileFilters([{ field: 'a', text: '=hello' }])(item));
    assert.ok(compileFilters([{ field: 'b', text: '=' }])(item));
    assert.ok(compileFilters([{ field: 'a', text: '!=' }])(item));
    assert.ok(compileFilters([{ field: 'c', text: 'y' }])(item));
    assert.ok(compileFilters([{ field: '_key', text: 'k' }])(item));
    assert.ok((sortKeyOf('9.5') as number) < (sortKeyOf('10') as number));
  });

  for (const cached of [false, true]) {
    it(`filters and sorts by a field, ${cached ? 'from memory' : 'by scanning the store'}`, async () => {
      const cache = cached ? new ItemCache(store, 'book') : null;
      const v = new ItemView(
        store,
        { type: 'book', filters: [{ field: 'title', text: '9' }], sort: { field: 'price', descending: true } },
        cache,
      );
      const n = await v.count();
      let expected = 0;
      for await (const it of store.iterateItems('book')) if (String(it.data.title).includes('9')) expected++;
      assert.equal(n, expected);
      const rows = await v.page(0, n);
      const prices = rows.map((r) => Number(r.data.price));
      assert.deepEqual(
        prices,
        [...prices].sort((a, b) => b - a),
      );
      assert.ok(rows.every((r) => String(r.data.title).includes('9')));
      // New items are indexed incrementally.
      await store.writeBatch(
        [],
        [
          {
            type: 'book',
            key: `new-${cached}`,
            json: JSON.stringify({
              title: `Book 999 ${cached}`,
              price: cached ? '1001' : '1000',
              broken: '',
              tags: [],
            }),
            fields: ['title'],
            url: 'http://s.test/n',
            rule: 'book',
            run: 'r',
            fetchedAt: 5,
          },
        ],
        'ignore',
      );
      assert.equal(await v.count(), n + 1);
      assert.equal((await v.page(0, 1))[0]!.data.price, cached ? '1001' : '1000');
    });
  }

  it('pages unfiltered views straight from the store', async () => {
    const v = new ItemView(store, { type: 'book', filters: [], sort: { field: '_key', descending: false } });
    assert.ok(v.direct);
    assert.equal((await v.page(0, 1))[0]!.key, 'k0');
  });

  it('reports a field that is always empty as 100% empty', async () => {
    const q = await new QualityTracker(store, 'book').update();
    const broken = q.fields.find((f) => f.field === 'broken')!;
    assert.equal(broken.empty, q.total);
    assert.equal(q.fields.find((f) => f.field === 'title')!.distinct, q.total);
    assert.equal(q.fields.find((f) => f.field === 'tags')!.empty, q.total - 250, 'odd books have tags');
  });

  // Issue 23, item 6: after a run with a broken selector the table held both runs' items and read "author 50% empty".
  it("shows one run's items, the latest by default, with the field quality of that run", async () => {
    const runDir = mkdtempSync(join(tmpdir(), 'cs-runs-'));
    const runs = new SqliteStore(join(runDir, 'runs.sqlite'));
    await runs.open();
    try {
      const quote = (run: string, i: number, author: string) => ({
        type: 'quote',
        key: `${run}-${i}`,
        json: JSON.stringify({ text: `q${i}`, author }),
        fields: ['text', 'author'],
        url: `http://s.test/q${i}`,
        rule: 'list',
        run,
        fetchedAt: run === 'r1' ? 1000 + i : 5000 + i,
      });
      await runs.writeBatch(
        [],
        Array.from({ length: 10 }, (_, i) => quote('r1', i, `A${i}`)),
        'ignore',
      );
      await runs.writeBatch(
        [],
        Array.from({ length: 10 }, (_, i) => quote('r2', i, '')),
        'ignore',
      );
      const src = new ResultsSource(runs);
      const view = await src.setQuery({ itemType: 'quote', filters: {}, sort: null, hidden: [], showQuality: false });
      assert.equal(view.run, 'latest');
      assert.equal(src.run, 'r2', 'the latest run');
      assert.deepEqual(await src.count(), { total: 10, stored: 20 });
      assert.ok(
        (await src.rows(0, 100)).every((r) => r.cells._run === 'r2'),
        'only its rows, with their run shown',
      );
      const latest = await src.fieldQuality();
      assert.equal(latest!.total, 10);
      assert.equal(
        latest!.fields.find((f) => f.field === 'author')!.empty,
        10,
        'author is empty in every item of the broken run, not in 50%',
      );
      const runsShown = await src.runsShown();
      assert.deepEqual(
        runsShown.runs.map((r) => [r.id, r.items]),
        [
          ['r1', 10],
          ['r2', 10],
        ],
      );
      await src.setQuery({ ...view, run: 'r1' });
      assert.equal((await src.count()).total, 10);
      assert.equal((await src.fieldQuality())!.fields.find((f) => f.field === 'author')!.empty, 0);
      await src.setQuery({ ...view, run: 'all' });
      assert.equal((await src.count()).total, 20);
      assert.equal((await src.fieldQuality())!.fields.find((f) => f.field === 'author')!.empty, 10);
      // A third run's items make it the latest one.
      await src.setQuery(view);
      await runs.writeBatch([], [quote('r3', 0, 'Z')], 'ignore');
      assert.equal(await src.refreshRuns(), true);
      await src.setQuery(view);
      assert.equal(src.run, 'r3');
      assert.equal((await src.count()).total, 1);

      // Issue 32, item 7: with no type chosen, the view opens on the type the task file declares first, not on the
      // alphabetically first ('author' < 'quote').
      await runs.writeBatch(
        [],
        [
          {
            type: 'author',
            key: 'a1',
            json: JSON.stringify({ name: 'A' }),
            fields: ['name'],
            url: 'http://s.test/a1',
            rule: 'author',
            run: 'r3',
            fetchedAt: 6000,
          },
        ],
        'ignore',
      );
      const declared = new ResultsSource(runs, null, ['quote', 'author']);
      assert.deepEqual(await declared.types(), ['quote', 'author']);
      assert.equal(
        (await declared.setQuery({ itemType: null, filters: {}, sort: null, hidden: [], showQuality: false })).itemType,
        'quote',
      );
      assert.deepEqual(await new ResultsSource(runs).types(), ['author', 'quote'], 'without a task file, by name');
    } finally {
      await runs.close();
      rmSync(runDir, { recursive: true, force: true });
    }
  });

  it('exports exactly the filtered, sorted view', async () => {
    const v = new ItemView(store, { type: 'book', filters: [{ field: 'title', text: '=book 42' }], sort: null });
    let text = '';
    const out = new Writable({ write: (c, _e, cb) => ((text += String(c)), cb()) });
    const r = await exportItems(viewAsStore(v, store), { type: 'book', format: 'jsonl', out });
    assert.equal(r.items, 1);
    assert.equal(JSON.parse(text.trim()).title, 'Book 42');
  });
});
