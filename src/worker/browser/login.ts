import type { Page } from 'playwright-core';
import type { LoginSpec } from '../../core/task/model';
import { expandValue } from '../../core/task/secrets';
import { FetchFailure } from '../fetcher';
import { lendCookies } from './cookies';
import { BrowserGoneError, type BrowserPool } from './pool';
import { BrowserFailure, clearStorage, contextKindFor, HUNG_GRACE_MS, withTimeout, type RenderOptions } from './render';

// A login in the browser (`login: { browser: true }`): for a login form a script builds (its CSRF token fetched by
// the script), which a fetched login page does not have. The page is opened in a context of the worker's pool, as a
// render is (the session's cookies lent, its proxy and the address guard through the egress proxy), each input
// found by its selector and filled, the form submitted, the check waited for; the cookies the browser has then go
// back to the session, where fetched and rendered pages alike take them.

type Env = Readonly<Record<string, string | undefined>>;

export interface BrowserLogin {
  /** Null when the login worked, else why not (never a value sent). Throws a FetchFailure when a retry may help. */
  logIn(login: LoginSpec, opts: RenderOptions, timeoutMs: number, env: Env): Promise<string | null>;
}

export function poolLogin(pool: BrowserPool): BrowserLogin {
  return {
    async logIn(login, opts, timeoutMs, env) {
      // Expanded before a browser is asked for anything: a missing variable is a failed login, not a render.
      const values: Array<[string, string]> = [];
      const missing: string[] = [];
      for (const [selector, template] of Object.entries(login.fields)) {
        const e = expandValue(template, env);
        missing.push(...e.missing);
        values.push([selector, e.value]);
      }
      if (missing.length) return `environment variable(s) not set: ${[...new Set(missing)].join(', ')}`;
      const kind = await contextKindFor(pool, opts);
      try {
        return await pool.withPage(kind, timeoutMs + HUNG_GRACE_MS, (page, lease, discard) =>
          loginOn(page, login, values, opts, timeoutMs, () => lease?.reset(), discard),
        );
      } catch (err) {
        if (err instanceof FetchFailure) throw err;
        if (err instanceof BrowserGoneError)
          throw new BrowserFailure(err.kind, `${err.message} (logging in at ${login.url})`);
        // A navigation that failed (the site unreachable): the page is retried, the session not marked failed.
        throw new FetchFailure(
          'network',
          `logging in at ${login.url} in the browser: ${err instanceof Error ? err.message.split('\n')[0] : String(err)}`,
          true,
        );
      }
    },
  };
}

async function loginOn(
  page: Page,
  login: LoginSpec,
  values: ReadonlyArray<[string, string]>,
  opts: RenderOptions,
  timeoutMs: number,
  reset: () => void,
  discard: () => void,
): Promise<string | null> {
  const deadline = Date.now() + timeoutMs;
  const left = () => Math.max(1, deadline - Date.now());
  reset();
  const context = page.context();
  await context.clearCookies();
  const writeBack = opts.cookies ? await lendCookies(context, opts.cookies, login.url) : null;
  const loginOrigin = new URL(login.url).origin;
  const origins = new Set([loginOrigin]);
  // Credentials only to the login's origin (as a fetched login, access.ts): a request of the page that carries a
  // body anywhere else is refused. Taken before the page's own route (routes set later are asked first).
  const guard = async (route: import('playwright-core').Route) => {
    const req = route.request();
    const u = new URL(req.url());
    if (/^https?:$/.test(u.protocol)) origins.add(u.origin);
    if (req.method() !== 'GET' && req.method() !== 'HEAD' && u.origin !== loginOrigin)
      return route.abort('blockedbyclient');
    return route.fallback();
  };
  await page.route('**/*', guard);
  try {
    const response = await page.goto(login.url, { waitUntil: 'load', timeout: left() });
    const status = response?.status() ?? 200;
    if (status >= 400) return `HTTP ${status} loading the login page`;
    const scope = login.formSelector !== null ? page.locator(login.formSelector).first() : page;
    let last: import('playwright-core').Locator | null = null;
    for (const [selector, value] of values) {
      const input = scope.locator(selector).first();
      try {
        await input.waitFor({ state: 'visible', timeout: left() });
      } catch {
        return `no ${selector}${login.formSelector !== null ? ` in ${login.formSelector}` : ''} on ${page.url()} within ${timeoutMs} ms`;
      }
      await input.fill(value, { timeout: left() });
      last = input;
    }
    if (login.submitSelector !== null) {
      const submit = scope.locator(login.submitSelector).first();
      try {
        await submit.waitFor({ state: 'visible', timeout: left() });
      } catch {
        return `no ${login.submitSelector} to submit on ${page.url()} within ${timeoutMs} ms`;
      }
      await submit.click({ timeout: left() });
    } else if (last) await last.press('Enter', { timeout: left() });
    // Done when the page shows what a logged-in page has, or else when its password field is gone.
    const check = login.checkSelector ?? 'input[type=password]';
    try {
      await page.waitForSelector(check, {
        state: login.checkSelector !== null ? 'attached' : 'detached',
        timeout: left(),
      });
    } catch {
      return login.checkSelector !== null
        ? `${page.url()} has no ${login.checkSelector}`
        : `${page.url()} still shows a password field`;
    }
    // The login's own requests (a cookie set by a fetch the page made after the check appeared) are waited for.
    await page.waitForLoadState('networkidle', { timeout: Math.min(left(), 2_000) }).catch(() => undefined);
    return null;
  } finally {
    await page.unroute('**/*', guard).catch(() => undefined);
    // The session gets the cookies the login set; nothing the page stored is left for the context's next page.
    if (writeBack) await withTimeout(writeBack(), 5_000).catch(() => undefined);
    await withTimeout(clearStorage(page, origins), 5_000).catch(discard);
  }
}
