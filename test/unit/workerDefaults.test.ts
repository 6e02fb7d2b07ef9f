import assert from 'node:assert/strict';
import { availableParallelism } from 'node:os';
import { defaultWorkers, optionalPositiveInt, positiveInt } from '../../src/worker/args';

describe('worker defaults', () => {
  it('starts one worker per two CPU cores, at least one', () => {
    assert.deepEqual(
      [1, 2, 3, 4, 7, 8, 16].map((cores) => defaultWorkers(cores)),
      [1, 1, 1, 2, 3, 4, 8],
    );
    assert.equal(
      defaultWorkers(),
      Math.max(1, Math.floor(availableParallelism() / 2)),
      "this machine's cores by default",
    );
  });

  it('leaves an absent timing flag to the runtime, and names a bad one', () => {
    assert.equal(optionalPositiveInt(undefined, 'stalled-interval'), undefined);
    assert.equal(optionalPositiveInt('1000', 'stalled-interval'), 1000);
    for (const bad of ['', '0', '1.5', 'abc']) {
      assert.throws(
        () => optionalPositiveInt(bad, 'lock-duration'),
        new RegExp(`^FlagValueError: --lock-duration '${bad}': expected a whole number of at least 1$`),
      );
    }
    assert.equal(positiveInt(undefined, 'workers', 3), 3);
  });
});
