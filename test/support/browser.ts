import { findBrowser } from '../../src/worker/browser/executable';
import { skipBecause } from './skip';

/**
 * The Chromium executable the tests render with; without one the suite is skipped saying why, except in CI, where
 * a missing browser is a broken machine and fails the run.
 */
export function browserOrSkip(ctx: Mocha.Context): string {
  try {
    return findBrowser();
  } catch (err) {
    return skipBecause(ctx, `no Chromium: ${(err as Error).message}`);
  }
}
