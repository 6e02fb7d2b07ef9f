import assert from 'node:assert/strict';
import { waitForPagesInFlight } from '../../src/run/pagesInFlight';

// The wait before a stopped run is closed (session.ts closeStopped): on a clock of its own, so nothing here depends
// on how fast the machine is.

function clocked(actives: number[]) {
  let t = 0;
  const told: number[] = [];
  const slept: number[] = [];
  return {
    told,
    slept,
    probe: {
      active: () => Promise.resolve(actives.length > 1 ? actives.shift()! : actives[0]!),
      sleep: (ms: number) => {
        slept.push(ms);
        t += ms;
        return Promise.resolve();
      },
      now: () => t,
    },
    onWaiting: (n: number) => told.push(n),
  };
}

describe('waiting for the pages other workers hold before a stopped run is closed', () => {
  it('returns at once, saying nothing, when no page is in flight', async () => {
    const c = clocked([0]);
    assert.equal(await waitForPagesInFlight(c.probe, { pollMs: 100, onWaiting: c.onWaiting }), 0);
    assert.deepEqual([c.told, c.slept], [[], []]);
  });

  it('waits until the last page is done, and says so once', async () => {
    const c = clocked([3, 2, 2, 1, 0]);
    assert.equal(await waitForPagesInFlight(c.probe, { pollMs: 100, onWaiting: c.onWaiting }), 0);
    assert.deepEqual(c.told, [3]);
    assert.deepEqual(c.slept, [100, 100, 100, 100]);
  });

  it('gives up at its bound on a page nobody finishes (a worker that died holding it)', async () => {
    const c = clocked([1]);
    assert.equal(await waitForPagesInFlight(c.probe, { pollMs: 400, boundMs: 1_000, onWaiting: c.onWaiting }), 1);
    assert.deepEqual(c.told, [1]);
    // The last pause ends at the bound, not a poll past it.
    assert.deepEqual(c.slept, [400, 400, 200]);
  });
});
