import { strict as assert } from 'node:assert';
import { RepeatedLines } from '../../src/worker/repeatedLines';

describe('RepeatedLines: a line an outage repeats on every reconnect is said once a window', () => {
  const refused = "worker error on 'books': connect ECONNREFUSED 127.0.0.1:6379";

  it('says the first, holds back repeats within the window, then says it again with the count', () => {
    const lines = new RepeatedLines(60_000);
    assert.equal(lines.next(refused, 0), refused);
    for (let t = 3_000; t < 60_000; t += 3_000) assert.equal(lines.next(refused, t), null, `at ${t} ms`);
    assert.equal(lines.next(refused, 60_000), `${refused} (and 19 more times in the last 60 s)`);
    assert.equal(lines.next(refused, 61_000), null);
  });

  it('says a repeat after a quiet window without a count, and other lines as they come', () => {
    const lines = new RepeatedLines(60_000);
    assert.equal(lines.next(refused, 0), refused);
    const other = "worker error on 'quotes': connect ECONNREFUSED 127.0.0.1:6379";
    assert.equal(lines.next(other, 1_000), other);
    assert.equal(lines.next(refused, 120_000), refused);
  });
});
