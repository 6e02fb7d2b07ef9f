import { strict as assert } from 'node:assert';
import { groupDigits } from '../../src/core/units';

describe('groupDigits', () => {
  it("writes integers as toLocaleString('en-US') does", () => {
    const values = [0, 7, 999, 1000, 1001, 12_345, 999_999, 1_000_000, 123_456_789, Number.MAX_SAFE_INTEGER];
    for (let i = 0; i < 2_000; i++) values.push(Math.floor(Math.random() * 10 ** Math.floor(Math.random() * 16)));
    for (const v of values) {
      assert.equal(groupDigits(v), v.toLocaleString('en-US'), `${v}`);
      if (v !== 0) assert.equal(groupDigits(-v), (-v).toLocaleString('en-US'), `${-v}`);
    }
  });

  it('leaves what is not a safe integer to String()', () => {
    assert.equal(groupDigits(1.5), '1.5');
    assert.equal(groupDigits(NaN), 'NaN');
    assert.equal(groupDigits(2 ** 60), String(2 ** 60));
  });
});
