import type { Page, Request } from 'playwright-core';
import { describeAction, scriptsRefused, type ActionStep } from '../../core/task/actions';
import type { PageAction, WaitTarget } from '../../core/task/model';
import { expandValue } from '../../core/task/secrets';
import { FetchFailure } from '../fetcher';
import { BrowserGoneError } from './pool';

export type { ActionStep };

// Runs a rule's `browser.actions` on a rendered page (render.ts calls it once the page is ready, before reading it):
// the worker's renders, `fixture save` and the designer's preview alike. Each action is bounded by its own timeout
// and by the render's deadline; the ones that repeat stop at their `max`. Each step is reported (what, how many,
// how long, the error), for the designer's preview.

export interface ActionContext {
  /** Milliseconds left before the render's deadline. */
  readonly left: () => number;
  /** Where `${CRAWL_STUDIO_*}` in `fill`/`select` values come from. */
  readonly env: Readonly<Record<string, string | undefined>>;
  /** The workspace's scripts by their name in the task file; absent: scripts are not allowed here. */
  readonly scripts?: ReadonlyMap<string, string>;
  /** Told each step as it ends (the designer's preview lists them). */
  readonly onStep?: (step: ActionStep) => void;
}

/** No request in flight for this long: the network is idle (Playwright's own `networkidle` measure). */
const NETWORK_IDLE_MS = 500;
/** Quiet (no request, no DOM change) this long after a click: what it set off has ended. */
const SETTLED_MS = 250;

/** Runs `actions` in order; the first that fails fails the page, as a FetchFailure naming it. */
export async function runActions(
  page: Page,
  actions: readonly PageAction[],
  ctx: ActionContext,
): Promise<ActionStep[]> {
  if (actions.length === 0) return [];
  const steps: ActionStep[] = [];
  const network = trackRequests(page);
  try {
    for (const [index, action] of actions.entries()) {
      const started = Date.now();
      const timeoutMs = Math.max(1, Math.min(action.timeoutMs, ctx.left()));
      const step = (count: number | null, unit: string | null, error: string | null): ActionStep => ({
        index,
        kind: action.kind,
        action: describeAction(action),
        count,
        unit,
        ms: Date.now() - started,
        error,
      });
      try {
        const [count, unit] = await runOne(page, action, timeoutMs, ctx, network);
        steps.push(step(count, unit, null));
        ctx.onStep?.(steps[steps.length - 1]!);
      } catch (err) {
        const failure = asActionFailure(err, index, action, timeoutMs);
        const prefix = `browser.actions[${index}] (${describeAction(action)}): `;
        steps.push(
          step(null, null, failure.message.startsWith(prefix) ? failure.message.slice(prefix.length) : failure.message),
        );
        ctx.onStep?.(steps[steps.length - 1]!);
        throw failure;
      }
    }
    return steps;
  } finally {
    network.stop();
  }
}

type Counted = [count: number | null, unit: string | null];

async function runOne(
  page: Page,
  a: PageAction,
  timeoutMs: number,
  ctx: ActionContext,
  network: RequestTracker,
): Promise<Counted> {
  const deadline = Date.now() + timeoutMs;
  switch (a.kind) {
    case 'scroll':
      return scroll(page, a, deadline);
    case 'click':
      return click(page, a, deadline, network);
    case 'wait':
      return wait(page, a.for, timeoutMs, network);
    case 'fill':
    case 'select': {
      const value = expanded(a.value, ctx);
      const target = page.locator(a.selector).first();
      if (a.kind === 'fill') await target.fill(value, { timeout: timeoutMs });
      else await target.selectOption(value, { timeout: timeoutMs });
      return [await page.locator(a.selector).count(), 'elements'];
    }
    case 'press':
      if (a.selector) await page.locator(a.selector).first().press(a.key, { timeout: timeoutMs });
      else await page.keyboard.press(a.key);
      return [null, null];
    case 'evaluate': {
      const source = ctx.scripts?.get(a.file);
      if (source === undefined) throw new ActionError('action', `'${a.file}' ${scriptsRefused()}`, false);
      // Its body as an async function's: `await` works, and the page is read once it has ended.
      await withDeadline(page.evaluate(`(async () => {\n${source}\n})()`), timeoutMs);
      return [null, null];
    }
  }
}

type Scroll = Extract<PageAction, { kind: 'scroll' }>;
type Click = Extract<PageAction, { kind: 'click' }>;

/** Scrolls to the bottom until `count` entries, no growth within `idle`, or `max` scrolls. */
async function scroll(page: Page, a: Scroll, deadline: number): Promise<Counted> {
  // With a selector, its matches tell growth (and its last one is scrolled into view, for a feed in a scrolling box).
  const measure = () =>
    page.evaluate(
      (sel) => (sel ? document.querySelectorAll(sel).length : document.documentElement.scrollHeight),
      a.selector,
    );
  let size = await measure();
  let scrolls = 0;
  while (scrolls < a.max && !(a.count !== null && size >= a.count)) {
    await page.evaluate((sel) => {
      const all = sel ? document.querySelectorAll(sel) : null;
      all?.[all.length - 1]?.scrollIntoView({ block: 'end' });
      window.scrollTo(0, document.documentElement.scrollHeight);
    }, a.selector);
    scrolls++;
    const grown = await grew(page, a.selector, size, Math.min(a.idleMs, deadline - Date.now()));
    if (!grown) {
      if (Date.now() >= deadline) throw timedOut();
      break;
    }
    size = await measure();
  }
  return a.selector ? [size, 'elements'] : [scrolls, 'scrolls'];
}

/** Whether the page grew past `size` within `ms` (polled in the page, on each animation frame). */
async function grew(page: Page, selector: string | null, size: number, ms: number): Promise<boolean> {
  if (ms <= 0) return false;
  try {
    await page.waitForFunction(
      ([sel, before]) => (sel ? document.querySelectorAll(sel).length : document.documentElement.scrollHeight) > before,
      [selector, size] as const,
      { timeout: ms },
    );
    return true;
  } catch (err) {
    if (isTimeout(err)) return false;
    throw err;
  }
}

/** One click (waiting for the element), or, with `untilGone`, clicks while the element is shown and the page changes. */
async function click(page: Page, a: Click, deadline: number, network: RequestTracker): Promise<Counted> {
  const target = page.locator(a.selector).locator('visible=true').first();
  if (!a.untilGone) {
    try {
      await target.click({ timeout: Math.max(1, deadline - Date.now()) });
      return [1, 'clicks'];
    } catch (err) {
      if (a.optional && isTimeout(err)) return [0, 'clicks'];
      throw err;
    }
  }
  let clicks = 0;
  while (clicks < a.max && (await target.count()) > 0) {
    const before = await mutations(page);
    // A button disabled while its page loads is waited for (Playwright waits until it can be clicked).
    await target.click({ timeout: Math.max(1, deadline - Date.now()) });
    clicks++;
    if (!(await changed(page, before, Math.min(a.idleMs, deadline - Date.now())))) {
      if (Date.now() >= deadline) throw timedOut();
      break;
    }
    // What the click set off (a request, then the entries it brings) ends before the element is looked for again:
    // a button removed once the last entries arrived is not clicked a last time.
    await settle(page, network, Math.min(a.idleMs * 3, deadline - Date.now()));
  }
  return [clicks, 'clicks'];
}

/** No request in flight and no DOM change for a moment, waited for at most `ms` (a page that never settles goes on). */
async function settle(page: Page, network: RequestTracker, ms: number): Promise<void> {
  const until = Date.now() + ms;
  for (;;) {
    const seen = await mutations(page);
    const left = until - Date.now();
    if (left <= 0) return;
    try {
      await network.idle(SETTLED_MS, left);
    } catch (err) {
      if (isTimeout(err)) return;
      throw err;
    }
    if ((await mutations(page)) === seen) return;
  }
}

/** DOM changes seen since the page's first action (a MutationObserver of ours, kept on the page's window). */
function mutations(page: Page): Promise<number> {
  return page.evaluate(() => {
    const w = window as unknown as { __crawlStudioMutations?: { n: number } };
    if (!w.__crawlStudioMutations) {
      const box = (w.__crawlStudioMutations = { n: 0 });
      new MutationObserver((list) => (box.n += list.length)).observe(document, {
        subtree: true,
        childList: true,
        characterData: true,
        attributes: true,
      });
    }
    return w.__crawlStudioMutations.n;
  });
}

async function changed(page: Page, before: number, ms: number): Promise<boolean> {
  if (ms <= 0) return false;
  try {
    await page.waitForFunction(
      (n) => ((window as unknown as { __crawlStudioMutations?: { n: number } }).__crawlStudioMutations?.n ?? 0) > n,
      before,
      { timeout: ms },
    );
    return true;
  } catch (err) {
    if (isTimeout(err)) return false;
    throw err;
  }
}

async function wait(page: Page, w: WaitTarget, timeoutMs: number, network: RequestTracker): Promise<Counted> {
  switch (w.kind) {
    case 'selector':
      await page.waitForSelector(w.selector, { state: w.state, timeout: timeoutMs });
      return [await page.locator(w.selector).count(), 'elements'];
    case 'networkidle':
      await network.idle(NETWORK_IDLE_MS, timeoutMs);
      return [null, null];
    case 'delay':
      await page.waitForTimeout(Math.min(w.ms, timeoutMs));
      return [null, null];
  }
}

interface RequestTracker {
  idle(quietMs: number, timeoutMs: number): Promise<void>;
  stop(): void;
}

/**
 * Requests the page has in flight. Playwright's `networkidle` fires once per navigation, long before what an action
 * sets off: after a click, this is what tells that the requests it made have ended.
 */
function trackRequests(page: Page): RequestTracker {
  const inFlight = new Set<Request>();
  let last = Date.now();
  const add = (r: Request) => (inFlight.add(r), (last = Date.now()));
  const done = (r: Request) => {
    if (inFlight.delete(r)) last = Date.now();
  };
  page.on('request', add);
  page.on('requestfinished', done);
  page.on('requestfailed', done);
  return {
    async idle(quietMs, timeoutMs) {
      const until = Date.now() + timeoutMs;
      for (;;) {
        const quietFor = inFlight.size === 0 ? Date.now() - last : 0;
        if (quietFor >= quietMs) return;
        if (Date.now() >= until) throw timedOut();
        await page.waitForTimeout(Math.min(quietMs - quietFor || 50, until - Date.now()));
      }
    },
    stop() {
      page.off('request', add);
      page.off('requestfinished', done);
      page.off('requestfailed', done);
    },
  };
}

function expanded(template: string, ctx: ActionContext): string {
  const e = expandValue(template, ctx.env);
  if (e.missing.length)
    throw new ActionError('request', `environment variable(s) not set: ${[...new Set(e.missing)].join(', ')}`, false);
  return e.value;
}

/** A mistake of the task or its environment, said as the page's failure (asActionFailure). */
class ActionError extends Error {
  constructor(
    readonly cause_: 'action' | 'request',
    message: string,
    readonly retryable: boolean,
  ) {
    super(message);
  }
}

class ActionTimeout extends Error {
  override readonly name = 'TimeoutError';
}

function timedOut(): Error {
  return new ActionTimeout('timed out');
}

function isTimeout(err: unknown): boolean {
  return err instanceof Error && err.name === 'TimeoutError';
}

function withDeadline<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([p, new Promise<T>((_, reject) => (timer = setTimeout(() => reject(timedOut()), ms)))]).finally(
    () => clearTimeout(timer),
  );
}

/** The failure the page fails with: the action named by its place, a timeout retried, a mistake in the task not. */
function asActionFailure(err: unknown, index: number, a: PageAction, timeoutMs: number): Error {
  const what = `browser.actions[${index}] (${describeAction(a)})`;
  // The browser gone, a navigation refused: what render.ts makes of them, not the action's doing.
  if (err instanceof FetchFailure || err instanceof BrowserGoneError) return err;
  if (err instanceof ActionError) return new FetchFailure(err.cause_, `${what}: ${err.message}`, err.retryable);
  if (isTimeout(err)) return new FetchFailure('action', `${what}: timed out after ${timeoutMs} ms`, true);
  const message = err instanceof Error ? err.message.split('\n')[0]! : String(err);
  return new FetchFailure('action', `${what}: ${message}`, true);
}
