import assert from 'node:assert/strict';
import { fmtBytes, fmtDuration, fmtInt, plural } from '../../media/shared/format';

// The webviews' shared formatters (media/shared/format.ts, bundled into every view):
// pure functions, run here as they are, without a DOM. What the views show with them is the UI tests' part.

describe('webview formatters (media/shared/format.ts)', () => {
  it('fmtInt rounds and groups thousands the same in every locale', () => {
    assert.equal(fmtInt(0), '0');
    assert.equal(fmtInt(999.4), '999');
    assert.equal(fmtInt(999.5), '1,000');
    assert.equal(fmtInt(1_234_567), '1,234,567');
    assert.equal(fmtInt(-4200), '-4,200');
  });

  it('fmtBytes steps by 1024, keeps one decimal under 10 and none above', () => {
    assert.equal(fmtBytes(0), '0 B');
    assert.equal(fmtBytes(1023), '1023 B');
    assert.equal(fmtBytes(1024), '1.0 KB');
    assert.equal(fmtBytes(1536), '1.5 KB');
    assert.equal(fmtBytes(10 * 1024), '10 KB');
    assert.equal(fmtBytes(5.25 * 1024 * 1024), '5.3 MB');
    assert.equal(fmtBytes(3 * 1024 ** 3), '3.0 GB');
    assert.equal(fmtBytes(2048 * 1024 ** 4), '2048 TB', 'past the last unit the number grows');
  });

  it('fmtDuration shows seconds, then minutes and seconds, then hours and minutes; never negative', () => {
    assert.equal(fmtDuration(-5000), '0s', 'a clock skew between hosts never shows a negative time');
    assert.equal(fmtDuration(0), '0s');
    assert.equal(fmtDuration(59_499), '59s');
    assert.equal(fmtDuration(59_500), '1m 0s');
    assert.equal(fmtDuration(61_000), '1m 1s');
    assert.equal(fmtDuration(3_599_000), '59m 59s');
    assert.equal(fmtDuration(3_600_000), '1h 0m');
    assert.equal(fmtDuration(26 * 3_600_000 + 5 * 60_000), '26h 5m');
  });

  it('plural adds an s to every count but one', () => {
    assert.equal(plural(1, 'item'), '1 item');
    assert.equal(plural(0, 'item'), '0 items');
    assert.equal(plural(2, 'error'), '2 errors');
  });
});
