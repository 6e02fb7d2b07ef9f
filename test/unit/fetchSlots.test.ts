import assert from 'node:assert/strict';
import { FetchSlots, type SlotClock } from '../../src/worker/fetchSlots';

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

  it('refuses a size that is not a whole number of at least 1', () => {
    assert.throws(() => new FetchSlots(0), /size must be/);
    assert.throws(() => new FetchSlots(1.5), /size must be/);
  });

  describe("jobs wanted (Little's law over time in and out of a slot)", () => {
    // On the real clock a loaded machine stretched a 20 ms request to 150 and the ratio these tests check with it:
    // the jobs run on a virtual clock, where a sleep ends exactly on time.
    /** Runs `n` jobs, `parallel` at a time: each `outside` ms of other work, then a request of `request` ms. */
    async function jobs(
      clock: VirtualClock,
      slots: FetchSlots,
      n: number,
      parallel: number,
      outside: number,
      request: number,
    ): Promise<number[]> {
      const seen: number[] = [];
      slots.onJobsWanted((j) => seen.push(j));
      let next = 0;
      await clock.run(
        Promise.all(
          Array.from({ length: parallel }, async () => {
            while (next++ < n) {
              await slots.job(async (inSlot) => {
                if (outside > 0) await clock.delay(outside);
                return inSlot(() => clock.delay(request));
              });
            }
          }),
        ),
      );
      return seen;
    }
    function fetchSlots(size: number): { clock: VirtualClock; slots: FetchSlots } {
      const clock = new VirtualClock();
      return { clock, slots: new FetchSlots(size, clock) };
    }

    it('twice the slots until a job has made a request', () => {
      const slots = new FetchSlots(4);
      assert.equal(slots.jobsWanted(), 8);
    });

    it('takes up to twice the jobs when a job spends longer outside its request than in it', async () => {
      const { clock, slots } = fetchSlots(4);
      // Little's law would want 4 × (40 + 20) / 20 = 12; twice the slots is the most a worker takes.
      const seen = await jobs(clock, slots, 12, 4, 40, 20);
      assert.equal(slots.jobsWanted(), 8);
      assert.deepEqual(seen, [], 'it was so from the start');
    });

    it('takes as many jobs as keep the requests busy between one and two per slot', async () => {
      const { clock, slots } = fetchSlots(4);
      // 4 × (10 + 20) / 20 = 6.
      const seen = await jobs(clock, slots, 12, 4, 10, 20);
      assert.equal(slots.jobsWanted(), 6);
      assert.deepEqual(seen, [6]);
    });

    it('stays at one job per slot when the request is nearly all of a job (a slow site)', async () => {
      const { clock, slots } = fetchSlots(4);
      const seen = await jobs(clock, slots, 12, 4, 0, 40);
      assert.equal(slots.jobsWanted(), 4);
      assert.deepEqual(seen, [4], 'the worker was told once, after the first job');
    });

    it('does not count waiting for a slot as work: more jobs than slots, all request, want no more jobs', async () => {
      const { clock, slots } = fetchSlots(1);
      await jobs(clock, slots, 8, 4, 0, 20);
      assert.equal(slots.jobsWanted(), 1);
      // And back up when a job's other work grows to twice its request.
      await jobs(clock, slots, 30, 1, 40, 20);
      assert.equal(slots.jobsWanted(), 2);
    });

    it('does not count politeness waits as work: jobs queued at a host gate want no more jobs', async () => {
      const { clock, slots } = fetchSlots(4);
      let seen: number[] = [];
      slots.onJobsWanted((j) => seen.push(j));
      // Each job waits 40 ms at the host gate, then makes a 20 ms request: counted as work, the 40 ms would want
      // 4 × 60 / 20 = 12 jobs (8, at most).
      const polite = (n: number) =>
        Promise.all(
          Array.from({ length: n }, () =>
            slots.job(async (inSlot, politeWait) => {
              await politeWait(40);
              return inSlot(() => clock.delay(20));
            }),
          ),
        );
      await clock.run(polite(12));
      assert.equal(slots.jobsWanted(), 4);
      assert.deepEqual(seen, [4]);
      // The same 40 ms spent on anything else is work that more jobs would overlap.
      seen = [];
      for (let i = 0; i < 3; i++) {
        await clock.run(
          Promise.all(
            Array.from({ length: 4 }, () =>
              slots.job(async (inSlot) => {
                await clock.delay(40);
                return inSlot(() => clock.delay(20));
              }),
            ),
          ),
        );
      }
      assert.equal(slots.jobsWanted(), 8);
    });

    it('ignores jobs that made no request (a robots.txt skip, a scheduled run)', async () => {
      const { clock, slots } = fetchSlots(2);
      await jobs(clock, slots, 4, 2, 0, 30);
      assert.equal(slots.jobsWanted(), 2);
      for (let i = 0; i < 3; i++) await clock.run(slots.job(() => clock.delay(30)));
      assert.equal(slots.jobsWanted(), 2, 'jobs without a request changed nothing');
    });
  });
});

/** Time that moves only when every job waits for it: a sleep ends exactly on time, however busy the machine is. */
class VirtualClock implements SlotClock {
  private t = 0;
  private seq = 0;
  private readonly timers: { at: number; seq: number; wake: () => void }[] = [];
  now = (): number => this.t;
  delay = (ms: number): Promise<void> =>
    new Promise((wake) => this.timers.push({ at: this.t + ms, seq: this.seq++, wake }));

  /** Settles `work`, moving the clock to the end of the next sleep whenever nothing else can run. */
  async run<T>(work: Promise<T>): Promise<T> {
    let settled = false;
    work.then(
      () => (settled = true),
      () => (settled = true),
    );
    for (;;) {
      await new Promise((r) => setImmediate(r));
      if (settled) return work;
      this.timers.sort((a, b) => a.at - b.at || a.seq - b.seq);
      const next = this.timers.shift();
      if (!next) throw new Error('every job waits, and no sleep is pending');
      this.t = next.at;
      next.wake();
    }
  }
}
