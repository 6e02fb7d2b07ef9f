import type { BrowserSpec } from '../../src/core/task/model';
import { findBrowser } from '../../src/worker/browser/executable';
import type { RenderOptions } from '../../src/worker/browser/render';
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

/** A rendered rule's browser settings for pool-level tests: read once `selector` is in the page. */
export function renderSpec(selector: string): BrowserSpec {
  return {
    waitFor: { kind: 'selector', selector },
    block: ['image', 'font', 'media'],
    timeoutMs: 20_000,
    screenshot: 'never',
    actions: [],
  };
}

/** A render's request settings for pool-level tests (loopback servers allowed as the task's own hosts). */
export const renderOptions: RenderOptions = {
  timeoutMs: 20_000,
  maxBytes: 1_000_000,
  maxRedirects: 5,
  headers: {},
  userAgent: 'crawl-studio-test',
  privateAllowed: null,
};
