// Mocha's spec reporter, plus a JSON file (path in $CS_TEST_STATS) with the totals and the titles of the tests
// that failed or were skipped, so scripts/test.mjs can close the whole suite with one block that names them: CI
// shows only the tail of a run's output, and a failure must be readable there.
const { writeFileSync } = require('node:fs');
const Mocha = require('mocha');

class StatsReporter extends Mocha.reporters.Spec {
  constructor(runner, options) {
    super(runner, options);
    const failures = [];
    const skips = [];
    runner.on('fail', (test, err) => {
      const first = String((err && (err.message || err)) ?? '').split('\n').slice(0, 3).join(' | ');
      failures.push({ title: test.fullTitle(), file: test.file ?? test.parent?.file ?? '', error: first.slice(0, 400) });
    });
    runner.on('pending', (test) => skips.push({ title: test.fullTitle(), file: test.file ?? '', reason: skipReason(test) }));
    runner.once('end', () => {
      if (process.env.CS_TEST_STATS) {
        const s = runner.stats;
        writeFileSync(process.env.CS_TEST_STATS, JSON.stringify({ passed: s.passes, failed: s.failures, skipped: s.pending, failures, skips }));
      }
    });
  }
}
// Why a test was skipped: test/support/skip.ts puts it on the test, or on the suite a `before` hook skipped.
function skipReason(test) {
  for (let r = test; r; r = r.parent) if (r.skipReason) return r.skipReason;
  return test.pending && !test.fn ? 'marked it.skip / pending (no reason given)' : 'no reason given (skip through test/support/skip.ts)';
}

module.exports = StatsReporter;
