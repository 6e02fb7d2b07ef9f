import { strict as assert } from 'node:assert';
import { activityLine, runChange, type ActivityCounts } from '../../src/worker/activityLog';

// The lines a worker's own log says about what it did (worker/activityLog.ts): exact words, since operators grep
// them, and quiet when there is nothing to say.

const counts = (c: Partial<ActivityCounts>): ActivityCounts => ({ pages: 0, failed: {}, skipped: 0, items: 0, ...c });

describe("a worker's activity lines", () => {
  it('says the pages, failures by reason (most first), skips and items of the window, and the total', () => {
    assert.equal(
      activityLine(
        'books',
        counts({ pages: 1234, failed: { timeout: 1, 'http-404': 2 }, skipped: 4, items: 5432 }),
        counts({ pages: 45678 }),
        60_000,
      ),
      'books: 1,234 pages in the last 60 s (21/s), 3 failed (http-404: 2, timeout: 1), 4 skipped, 5,432 items; 45,678 pages since this worker started',
    );
    assert.equal(
      activityLine('books', counts({ pages: 1, items: 1 }), counts({ pages: 1 }), 60_000),
      'books: 1 page in the last 60 s (1/min), 1 item; 1 page since this worker started',
    );
  });

  it('says a slow rate per minute and a middling one to a tenth', () => {
    assert.match(activityLine('t', counts({ pages: 150 }), counts({ pages: 150 }), 60_000)!, /\(2\.5\/s\)/);
    assert.match(activityLine('t', counts({ pages: 12 }), counts({ pages: 12 }), 60_000)!, /\(12\/min\)/);
  });

  it('is silent for a window with no page', () => {
    assert.equal(activityLine('books', counts({}), counts({ pages: 9 }), 60_000), null);
  });

  it("says a run's start, its end, and waiting, each once", () => {
    const running = { run: 'r1', state: 'running' } as const;
    const wait = 'waiting for a run (`crawl-studio run /t/books.crawl.yaml` or Start Crawl starts one)';
    const change = (before: Parameters<typeof runChange>[2], now: Parameters<typeof runChange>[3], first = false) =>
      runChange('books', '/t/books.crawl.yaml', before, now, first);
    assert.equal(change(null, null, true), `books: no run in progress on this Redis; ${wait}`);
    assert.equal(
      change(null, { run: 'r0', state: 'finished' }, true),
      `books: no run in progress on this Redis; ${wait}`,
    );
    assert.equal(change(null, null), null, 'still nothing: said once');
    assert.equal(change(null, running, true), 'books: run r1 is running: taking its pages');
    assert.equal(change(null, running), 'books: run r1 is running: taking its pages');
    assert.equal(change(running, running), null);
    assert.equal(change(running, { run: 'r1', state: 'finished' }), `books: run r1 ended; ${wait}`);
    assert.equal(change(running, { run: 'r1', state: 'stopped' }), `books: run r1 was stopped; ${wait}`);
    assert.equal(change(running, null), `books: run r1 ended; ${wait}`);
    assert.equal(change(running, { run: 'r2', state: 'running' }), 'books: run r2 is running: taking its pages');
    assert.equal(
      change({ run: 'r1', state: 'finished' }, running),
      'books: run r1 is running: taking its pages',
      'a finished run reopened by a retry',
    );
  });
});
