import assert from 'node:assert/strict';
import { FetchSlots, jobsInFlight } from '../../src/worker/fetchSlots';

function deferred<T = void>() {
  let resolve!: (v: T) => void;
  let reject!: (e: Error) => void;
  const promise = new Promise<T>((res, rej) => ((resolve = res), (reject = rej)));
  return { promise, resolve, reject };
}

const tick = () => new Promise((r) => setImmediate(r));

describe('fetch slots', () => {
  it('runs at most `size` fetches at once and starts the waiting ones in the order they came', async () => {
    const slots = new FetchSlots(2);
    const gates = [deferred(), deferred(), deferred(), deferred()];
    const started: number[] = [];
    const runs = gates.map((g, i) => slots.run(async () => (started.push(i), g.promise.then(() => i))));
    await tick();
    assert.deepEqual(started, [0, 1]);
    assert.equal(slots.inUse(), 2);
    assert.equal(slots.queued(), 2);
    gates[1]!.resolve();
    await tick();
    assert.deepEqual(started, [0, 1, 2], 'a freed slot goes to the first in line');
    gates[0]!.resolve();
    gates[2]!.resolve();
    gates[3]!.resolve();
    assert.deepEqual(await Promise.all(runs), [0, 1, 2, 3]);
    assert.equal(slots.inUse(), 0);
    assert.equal(slots.queued(), 0);
  });

  it('gives the slot back when a fetch fails, and passes the failure on', async () => {
    const slots = new FetchSlots(1);
    await assert.rejects(
      slots.run(async () => {
        throw new Error('refused');
      }),
      /refused/,
    );
    assert.equal(slots.inUse(), 0);
    assert.equal(await slots.run(async () => 'next'), 'next');
  });

  it('never lets a newcomer take a slot ahead of a waiting fetch', async () => {
    const slots = new FetchSlots(1);
    const first = deferred();
    const order: string[] = [];
    const a = slots.run(() => first.promise.then(() => order.push('a')));
    const b = slots.run(async () => order.push('b'));
    first.resolve();
    // `c` arrives while `b` is being handed a's slot.
    const c = slots.run(async () => order.push('c'));
    await Promise.all([a, b, c]);
    assert.deepEqual(order, ['a', 'b', 'c']);
  });

  it('refuses a size that is not a whole number of at least 1, and takes twice the jobs', () => {
    assert.throws(() => new FetchSlots(0), /size must be/);
    assert.throws(() => new FetchSlots(1.5), /size must be/);
    assert.equal(jobsInFlight(8), 16);
  });
});
