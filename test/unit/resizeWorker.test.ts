import assert from 'node:assert/strict';
import { resizeRefusal, type WorkerBeat } from '../../src/frontier/fleet';

// `crawl-studio resize` (and anything else that asks a worker to change its concurrency): what it refuses, and the
// words it says. Taking the resize is tested end to end in test/integration/autoscale.test.ts.

const beat = (over: Partial<WorkerBeat> = {}): WorkerBeat => ({
  id: 'vm:42',
  pid: 42,
  host: 'vm',
  tasks: ['shop'],
  concurrency: 16,
  started: 0,
  lastSeen: 0,
  processed: 0,
  failed: 0,
  autoscale: { min: 2, max: 64, peak: 16, last: null, now: null },
  ...over,
});

describe('resizeRefusal: which resizes a worker can take', () => {
  it('accepts a whole number within the range of an autoscaled worker of the task', () => {
    for (const n of [2, 5, 64]) assert.equal(resizeRefusal(beat(), 'vm:42', 'shop', n), null);
  });

  it('refuses, saying why: no such worker, another task, a fixed worker, outside the range', () => {
    assert.match(resizeRefusal(undefined, 'vm:7', 'shop', 4)!, /no live worker vm:7 on this Redis/);
    assert.match(resizeRefusal(beat(), 'vm:42', 'blog', 4)!, /does not fetch pages of blog \(it works on shop\)/);
    assert.match(
      resizeRefusal(beat({ autoscale: undefined }), 'vm:42', 'shop', 4)!,
      /fixed concurrency of 16: only a worker started with --concurrency auto or MIN\.\.MAX can be resized/,
    );
    for (const n of [1, 65, 2.5, Number.NaN])
      assert.match(resizeRefusal(beat(), 'vm:42', 'shop', n)!, /within worker vm:42's range, 2\.\.64/);
  });
});
