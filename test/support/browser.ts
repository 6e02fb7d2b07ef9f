import { findBrowser } from '../../src/worker/browser/executable';
import { inCI } from './services';

/**
 * The Chromium executable the tests render with; without one the suite is skipped, except in CI, where a missing
 * browser is a broken machine and fails the run.
 */
export function browserOrSkip(ctx: Mocha.Context): string {
  try {
    return findBrowser();
  } catch (err) {
    if (inCI()) throw err;
    ctx.skip();
  }
}
