import type { Page } from 'playwright-core';
import { isJsonPath, type PageRule } from '../../core/task/model';

// A rendered list page read at `load` whose cards a script inserts after it (issue 30, item 7): the page is read
// with some of its links or none, and nothing fails. This notices it cheaply: the rule's link and item selectors are
// counted when the page is read and, for a few pages, watched for a moment after; more matches then are a warning
// (the run summary's, per rule). What is read is never changed by it: the crawl stays the one the task describes.

/** How long the page is watched after it was read. */
export const SETTLE_MS = 1_500;
/** Pages of each rule watched whatever they matched, in each worker process… */
const SAMPLED_PAGES = 3;
/** …and at most this many watched in all (those that matched nothing), so the cost is bounded per rule. */
const MAX_SETTLES = 20;

/** What a render watches for one page (absent: nothing). */
export interface LateCheck {
  /** The rule's CSS selectors of links and item scopes. */
  readonly selectors: readonly string[];
  /** Whether to watch the page, given how many elements the selectors matched when it was read. */
  settle(atLoad: number): boolean;
}

/** Which pages of each rendered rule a worker process watches. */
export class LateContentPolicy {
  private readonly rules = new Map<string, { pages: number; settles: number }>();

  /** The check for a page of `rule`; undefined for a rule that waits for something of its own or acts first. */
  checkFor(rule: PageRule): LateCheck | undefined {
    const spec = rule.browser;
    if (!spec || spec.waitFor.kind !== 'load' || spec.actions.length > 0) return undefined;
    const selectors = [
      ...rule.follow.filter((f) => f.kind === 'links').map((f) => f.selector),
      ...rule.items.flatMap((i) => (i.scope ? [i.scope] : [])),
    ].filter((s) => !isJsonPath(s));
    if (selectors.length === 0) return undefined;
    let t = this.rules.get(rule.name);
    if (!t) this.rules.set(rule.name, (t = { pages: 0, settles: 0 }));
    const sampled = t.pages++ < SAMPLED_PAGES;
    const tally = t;
    return {
      selectors,
      settle: (atLoad) => {
        if ((!sampled && atLoad > 0) || tally.settles >= MAX_SETTLES) return false;
        tally.settles++;
        return true;
      },
    };
  }
}

/** The selectors' matches in the page now (a selector the browser cannot take, e.g. cheerio's `:contains`, counts 0). */
export function countMatches(page: Page, selectors: readonly string[]): Promise<number> {
  return page.evaluate((sels) => {
    let n = 0;
    for (const s of sels) {
      try {
        n += document.querySelectorAll(s).length;
      } catch {
        // Not a selector this browser knows.
      }
    }
    return n;
  }, selectors);
}

/**
 * Whether more matches came within SETTLE_MS (and `left`) of the read: the counts, or null. Never a reason for the
 * page to fail: a page that navigated, broke or hung here is read already.
 */
export async function watchForLate(
  page: Page,
  selectors: readonly string[],
  atLoad: number,
  left: () => number,
): Promise<{ atLoad: number; later: number } | null> {
  // The render's own deadline keeps room for its cleanup.
  const ms = Math.min(SETTLE_MS, left() - 2_000);
  if (ms <= 0) return null;
  try {
    await page.waitForFunction(
      ([sels, before]) => {
        let n = 0;
        for (const s of sels) {
          try {
            n += document.querySelectorAll(s).length;
          } catch {
            // As countMatches.
          }
        }
        return n > before;
      },
      [selectors, atLoad] as const,
      { timeout: ms },
    );
    return { atLoad, later: await countMatches(page, selectors) };
  } catch {
    return null;
  }
}
