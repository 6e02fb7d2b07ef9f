import { strict as assert } from 'node:assert';
import { FlagValueError } from '../../src/core/flagError';
import { logsAt, parseLogLevel } from '../../src/core/logLine';

// A worker's --log-level (core/logLine.ts): which lines a threshold keeps, and the words of a wrong value.

describe("a worker's --log-level", () => {
  it('keeps the lines at or above the threshold', () => {
    const kept = (least: 'info' | 'warn' | 'error') =>
      (['info', 'warn', 'error'] as const).filter((level) => logsAt(level, least));
    assert.deepEqual(kept('info'), ['info', 'warn', 'error']);
    assert.deepEqual(kept('warn'), ['warn', 'error']);
    assert.deepEqual(kept('error'), ['error']);
  });

  it("reads info (the default), warn (or Python's warning) and error, in any case", () => {
    assert.equal(parseLogLevel(undefined), 'info');
    assert.equal(parseLogLevel(''), 'info');
    assert.equal(parseLogLevel('WARNING'), 'warn');
    assert.equal(parseLogLevel('Error'), 'error');
  });

  it('refuses another value with the flag and what it takes (exit 2, as every flag value)', () => {
    assert.throws(
      () => parseLogLevel('debug'),
      (err: unknown) =>
        err instanceof FlagValueError && err.message === "--log-level 'debug': expected info, warn or error",
    );
  });
});
