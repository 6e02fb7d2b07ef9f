import { strict as assert } from 'node:assert';
import type { JobCounts } from '../../src/frontier/types';
import { nextPollMs } from '../../src/run/pollPace';

// When a session looks at its run again: at half the time the jobs left should take, never faster than 25 ms,
// never slower than the configured poll.

const counts = (left: Partial<JobCounts>): JobCounts => ({
  frontier: 0,
  waiting: 0,
  active: 0,
  delayed: 0,
  prioritized: 0,
  completed: 0,
  failed: 0,
  ...left,
});

describe('session: next poll', () => {
  it('waits the configured poll while there is no rate yet (start-up)', () => {
    assert.equal(nextPollMs(counts({ waiting: 1 }), 'running', 0, 500), 500);
  });

  it('looks again at half the time the jobs left should take at the current rate', () => {
    assert.equal(nextPollMs(counts({ active: 16, prioritized: 14 }), 'running', 300, 500), 50);
  });

  it('counts every unfinished state, not finished ones', () => {
    assert.equal(
      nextPollMs(
        counts({ waiting: 10, active: 10, delayed: 10, prioritized: 10, completed: 1e6, failed: 1e6 }),
        'running',
        100,
        1_000,
      ),
      200,
    );
  });

  it('a drained queue on a fast crawl: 25 ms, not faster', () => {
    assert.equal(nextPollMs(counts({}), 'running', 500, 500), 25);
    assert.equal(nextPollMs(counts({ active: 1 }), 'running', 1_000, 500), 25);
  });

  it("between runs (finished, paused) idles at the configured poll, whatever the last run's rate", () => {
    assert.equal(nextPollMs(counts({}), 'finished', 900, 200), 200);
    assert.equal(nextPollMs(counts({ waiting: 3 }), 'paused', 900, 200), 200);
    assert.equal(nextPollMs(counts({}), undefined, 900, 200), 200);
  });

  it('a slow crawl is not polled faster than configured', () => {
    assert.equal(nextPollMs(counts({ active: 5 }), 'running', 1, 500), 500);
    assert.equal(nextPollMs(counts({ waiting: 100_000 }), 'running', 800, 2_000), 2_000);
  });
});
