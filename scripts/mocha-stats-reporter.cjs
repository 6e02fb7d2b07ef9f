// Mocha's spec reporter, plus a JSON file (path in $CS_TEST_STATS) with the totals and the titles of the tests
// that failed or were skipped, so scripts/test.mjs can close the whole suite with one block that names them: CI
// shows only the tail of a run's output, and a failure must be readable there.
const { existsSync, readFileSync, writeFileSync } = require('node:fs');
const Mocha = require('mocha');

class StatsReporter extends Mocha.reporters.Spec {
  constructor(runner, options) {
    super(runner, options);
    const failures = [];
    const skips = [];
    // Where the time goes (issue 34): every test's and hook's duration, for scripts/test.mjs to list the slowest.
    const times = [];
    const timed = (r) =>
      times.push({ title: r.fullTitle(), file: r.file ?? r.parent?.file ?? '', ms: r.duration ?? 0 });
    runner.on('test end', timed);
    runner.on('hook end', (h) => h.duration >= 1000 && timed(h));
    runner.on('fail', (test, err) => {
      failures.push({ title: test.fullTitle(), file: test.file ?? test.parent?.file ?? '', error: summary(err) });
    });
    runner.on('pending', (test) =>
      skips.push({ title: test.fullTitle(), file: test.file ?? '', reason: skipReason(test) }),
    );
    runner.once('end', () => {
      if (process.env.CS_TEST_STATS) {
        const s = runner.stats;
        for (const k of skips) k.reason ??= sideReason(k.title);
        writeFileSync(
          process.env.CS_TEST_STATS,
          JSON.stringify({ passed: s.passes, failed: s.failures, skipped: s.pending, failures, skips, times }),
        );
      }
    });
  }
}
// A failure in a few lines: the message's first lines and its last ones (a message that carries a log names what
// happened last at its end), and, where an assertion was given its own message, the values it compared (which that
// message hides).
function summary(err) {
  const lines = String((err && (err.message || err)) ?? '').split('\n');
  const kept = lines.length > 12 ? [...lines.slice(0, 3), '…', ...lines.slice(-8)] : lines;
  const values =
    err && err.generatedMessage === false && ('actual' in err || 'expected' in err)
      ? `[actual ${brief(err.actual)}, expected ${brief(err.expected)}] `
      : '';
  return (values + kept.join(' | ')).slice(0, 1_600);
}
function brief(v) {
  let s;
  try {
    s = typeof v === 'string' ? JSON.stringify(v) : (JSON.stringify(v) ?? String(v));
  } catch {
    s = String(v);
  }
  return s.length > 200 ? `${s.slice(0, 200)}…` : s;
}
// Why a test was skipped: test/support/skip.ts puts it on the test, or on the suite a `before` hook skipped. Under
// mocha --parallel the test seen here is a copy without it: then the reason comes from the file
// $CS_TEST_SKIP_REASONS, where skip.ts also writes it (sideReason), and undefined here means "look there".
function skipReason(test) {
  for (let r = test; r; r = r.parent) if (r.skipReason) return r.skipReason;
  if (process.env.CS_TEST_SKIP_REASONS) return undefined;
  return test.pending && !test.fn
    ? 'marked it.skip / pending (no reason given)'
    : 'no reason given (skip through test/support/skip.ts)';
}
function sideReason(title) {
  const file = process.env.CS_TEST_SKIP_REASONS;
  const lines = file && existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : [];
  // The test's own reason, else its nearest suite's (the longest title that starts its title).
  const hit = lines
    .map((l) => JSON.parse(l))
    .filter((r) => title === r.title || title.startsWith(`${r.title} `))
    .sort((a, b) => b.title.length - a.title.length)[0];
  return hit?.reason ?? 'no reason given (marked it.skip / pending, or skipped without test/support/skip.ts)';
}

module.exports = StatsReporter;
