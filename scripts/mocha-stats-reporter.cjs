// Mocha's spec reporter, plus a JSON file with the totals (path in $CS_TEST_STATS) so scripts/test.mjs can
// print one closing "N passed, N failed" line for the whole suite.
const { writeFileSync } = require('node:fs');
const Mocha = require('mocha');

class StatsReporter extends Mocha.reporters.Spec {
  constructor(runner, options) {
    super(runner, options);
    runner.once('end', () => {
      if (process.env.CS_TEST_STATS) {
        const s = runner.stats;
        writeFileSync(process.env.CS_TEST_STATS, JSON.stringify({ passed: s.passes, failed: s.failures, skipped: s.pending }));
      }
    });
  }
}
module.exports = StatsReporter;
