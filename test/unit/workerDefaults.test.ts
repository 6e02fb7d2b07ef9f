import assert from 'node:assert/strict';
import { availableParallelism } from 'node:os';
import { defaultWorkers } from '../../src/worker/args';

describe('worker defaults', () => {
  it('starts one worker per two CPU cores, at least one', () => {
    assert.deepEqual([1, 2, 3, 4, 7, 8, 16].map((cores) => defaultWorkers(cores)), [1, 1, 1, 2, 3, 4, 8]);
    assert.equal(defaultWorkers(), Math.max(1, Math.floor(availableParallelism() / 2)), 'this machine\'s cores by default');
  });
});
