import { appendFileSync } from 'node:fs';
import { inCI } from './services';

// The one way a test skips. A skip says why, twice: on the spot, and again in the suite's closing block
// (scripts/mocha-stats-reporter.cjs reads `skipReason` from the test or a suite above it), because a silent skip
// reads as a pass. Under CI=true nothing is skipped: a missing tool there is a broken machine, and fails the run.

interface WithReason {
  skipReason?: string;
}

/**
 * Skips the running test, or, from a `before` hook, every test of its suite, saying why; throws instead when
 * process.env.CI is 'true' (or '1').
 */
export function skipBecause(ctx: Mocha.Context, reason: string): never {
  if (inCI()) throw new Error(`cannot skip in CI (CI=${process.env.CI}): ${reason}`);
  const runnable = ctx.test;
  // In a `before` hook mocha skips the whole suite, so the reason goes on the suite.
  const beforeAll =
    runnable !== undefined && (runnable as { type?: string }).type === 'hook' && /"before all"/.test(runnable.title);
  const target: ((Mocha.Runnable | Mocha.Suite) & WithReason) | undefined = beforeAll
    ? runnable.parent
    : (ctx.currentTest ?? runnable);
  if (target) target.skipReason = reason;
  // Under mocha --parallel the reporter sees copies of the tests, without skipReason: it reads this file instead.
  if (target && process.env.CS_TEST_SKIP_REASONS)
    appendFileSync(process.env.CS_TEST_SKIP_REASONS, JSON.stringify({ title: target.fullTitle(), reason }) + '\n');
  console.warn(`      skipped${target ? ` "${target.fullTitle()}"` : ''}: ${reason}`);
  ctx.skip();
}
