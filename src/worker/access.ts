import { setTimeout as delay } from 'node:timers/promises';
import type { Redis } from '../redis/connect';
import * as cheerio from 'cheerio/slim';
import type { CrawlTask, LoginSpec } from '../core/task/model';
import { expandJson, expandProxyUrl, expandValue } from '../core/task/secrets';
import {
  BodyOriginRefused,
  FetchFailure,
  fetchPage,
  fetchStream,
  type FetchedPage,
  type FetchOptions,
  type StreamedResponse,
} from './fetcher';
import { SessionPool, SessionRetired, type SessionCookies, type SessionRef, type Sessions } from './sessions';
import { SentBack } from './sentBack';
import { readForm } from '../core/request/form';
import type { BrowserLogin } from './browser/login';

// How a task with `session`, `login` or `proxy` fetches a page: in a session of the pool (its cookies, logged in
// first), through a proxy (another one when it fails), and the session retired when the answer looks like a block.
// A task without them never comes here: fetchPage alone, as before.

export interface Access {
  /**
   * `url` in a session, through a proxy, with `opts` (the page's own: its rule's headers, its request's method and
   * body, a conditional request's validators; the task's by default): fetched, or loaded by `load` (a rendered page,
   * browser/render.ts). `run`: the page's run, whose sessions it uses (a new run logs in afresh).
   */
  fetch(url: string, opts?: FetchOptions, load?: PageLoad, run?: string): Promise<FetchedPage>;
  /** A body read as it downloads (sitemaps), fetched as a page is: in a session, logged in, through the proxies. */
  stream<T>(url: string, consume: (res: StreamedResponse) => Promise<T>, opts?: FetchOptions, run?: string): Promise<T>;
  /** A request no session owns (robots.txt): through the proxies, the next one when one fails, no cookies. */
  fetchShared(url: string, opts: FetchOptions): Promise<FetchedPage>;
}

/** How a page is loaded once its session and proxy are chosen. */
export type PageLoad = (url: string, opts: SessionOptions) => Promise<FetchedPage>;

/** Fetch options in a session: its cookies as the browser takes them too (browser/cookies.ts). */
type SessionOptions = FetchOptions & { readonly cookies?: SessionCookies };

/** What a request in a session checks of its answer (each retires the session and throws when it fails). */
interface AnswerChecks {
  loggedOut(finalUrl: string, status: number): Promise<void>;
  blocked(page: FetchedPage): Promise<void>;
}

const NO_CHECKS: AnswerChecks = { loggedOut: () => Promise.resolve(), blocked: () => Promise.resolve() };

type Log = (level: 'info' | 'warn' | 'error', message: string) => void;

/** Longest a worker waits for another one to log a session in. */
const LOGIN_WAIT_MS = 60_000;

/**
 * The task's access, or null for a task without sessions and proxies. `sessions`: the fleet's pool in Redis (a
 * Redis connection), or a pool of the caller's (the designer's preview keeps one in memory).
 */
export function createAccess(
  task: CrawlTask,
  sessions: Redis | Sessions,
  log: Log,
  base: FetchOptions,
  env: Readonly<Record<string, string | undefined>> = process.env,
  browserLogin?: BrowserLogin,
): Access | null {
  if (!task.session && !task.proxy) return null;
  const pool: Sessions | null = !task.session
    ? null
    : 'take' in sessions
      ? sessions
      : new SessionPool(sessions, task.name, task.session);
  // Expanded here, in the worker, once: the values stay in this process's memory.
  const proxies = (task.proxy?.urls ?? []).map((template, i) => {
    const { url, problems } = expandProxyUrl(template, env);
    if (problems.length) throw new Error(`${task.file}: proxy.urls[${i}]: ${problems.join('; ')}`);
    return url;
  });
  let nextProxy = 0;

  /** Requests through the proxies from `first` on: a proxy that fails is named (without credentials) and the next tried. */
  async function viaProxies<T>(first: number, fetch: (proxy: string | undefined) => Promise<T>): Promise<T> {
    if (proxies.length === 0) return fetch(undefined);
    const failures: FetchFailure[] = [];
    for (let i = 0; i < proxies.length; i++) {
      const proxy = proxies[(first + i) % proxies.length]!;
      try {
        return await fetch(proxy);
      } catch (err) {
        if (!(err instanceof FetchFailure) || err.cause_ !== 'proxy') throw err;
        if (i < proxies.length - 1) log('warn', `${err.message}; trying another proxy`);
        failures.push(err);
      }
    }
    // A proxy that was only unreachable may answer on a retry; when every one refused its credentials (a 407), the
    // page fails at once: retrying a wrong password changes nothing.
    throw failures.findLast((f) => f.retryable) ?? failures[failures.length - 1]!;
  }

  const blocked = (page: FetchedPage, selector: string | null) =>
    selector !== null && page.isHtml && cheerio.load(page.body)(selector).length > 0;

  /**
   * One request the way a page is fetched: in a session of the pool (logged in first), with its cookies, through the
   * proxies; the session retired when the answer looks like a block. `go` makes the request and checks its answer.
   * A session retired under the page before its request was sent costs the page nothing: it goes to another session.
   */
  async function viaSession<T>(
    url: string,
    withOpts: FetchOptions,
    go: (opts: SessionOptions, checks: AnswerChecks) => Promise<T>,
    run = '',
  ): Promise<T> {
    if (!pool) return viaProxies(nextProxy++, (proxy) => go({ ...withOpts, proxy, cookies: undefined }, NO_CHECKS));
    const host = new URL(url).host;
    for (let round = 1; ; round++) {
      const taken = await pool.take(host, run);
      if ('waitMs' in taken) {
        const why = `every session waits out a Retry-After from ${host}`;
        throw new SentBack(
          `${why} (${Math.ceil(taken.waitMs / 1000)} s)`,
          taken.waitMs,
          new FetchFailure('session', `${why}; sent back too often`, true, null, taken.waitMs),
        );
      }
      try {
        return await inSession(pool, taken, url, host, withOpts, go);
      } catch (err) {
        if (!(err instanceof SessionRetired)) throw err;
        // Each round found a session retired by another page meanwhile: past a few, the page waits its turn again.
        if (round > pool.spec.pool + 1) throw new SentBack(err.message, 0, err);
      }
    }
  }

  /** One request in `session` (see viaSession). */
  async function inSession<T>(
    pool: Sessions,
    session: SessionRef & { login: string },
    url: string,
    host: string,
    withOpts: FetchOptions,
    go: (opts: SessionOptions, checks: AnswerChecks) => Promise<T>,
  ): Promise<T> {
    const spec = pool.spec;
    const first = task.proxy?.rotate === 'per-request' ? nextProxy++ : session.slot;
    const opts = (proxy: string | undefined): SessionOptions => ({
      ...withOpts,
      proxy,
      cookies: pool.cookies(session),
    });
    // The login is sent with the task's options, not the page's (its headers are the rule's, its body the page's).
    if (task.login) {
      const login = task.login;
      const attempt = login.browser
        ? () =>
            logInInBrowser(login, (lo) =>
              viaProxies(first, (proxy) =>
                lo({ ...base, privateAllowed: withLoginHost(login), proxy, cookies: pool.cookies(session) }),
              ),
            )
        : () =>
            logIn(login, (fo) =>
              viaProxies(first, (proxy) =>
                fetchPage(fo.url, { ...base, proxy, cookies: pool.cookies(session), ...fo.opts }),
              ),
            );
      await loggedIn(pool, session, session.login, login, attempt);
    }
    /** The failure of a page whose answer is a block: its own, when it retired the session; else the session's. */
    const retired = async (why: string, status: number | null, failure: FetchFailure): Promise<Error> => {
      if (await pool.retire(session)) {
        log('info', `session ${session.slot} retired: ${why}`);
        return failure;
      }
      // Another page retired the session first: this answer is that block, seen again, not something of this page.
      return new SentBack(
        `${why}, in session ${session.slot}, which another page had retired already`,
        0,
        new FetchFailure('session', `${why}; session retired`, true, status),
      );
    };
    const checks: AnswerChecks = {
      async loggedOut(finalUrl, status) {
        // Sent back to the login page: the site ended the session's login (expired, or logged out by a block).
        const login = task.login;
        if (
          login !== null &&
          new URL(finalUrl).pathname === new URL(login.url).pathname &&
          new URL(url).pathname !== new URL(login.url).pathname
        ) {
          const why = `${url} led back to the login page`;
          throw await retired(why, status, new FetchFailure('session', `${why}; session retired`, true, status));
        }
      },
      async blocked(page) {
        if (!blocked(page, spec.retireOnSelector)) return;
        const why = `${url} answered like a block (${spec.retireOnSelector})`;
        throw await retired(
          why,
          page.status,
          new FetchFailure('session', `${why}; session retired`, true, page.status),
        );
      },
    };
    try {
      return await viaProxies(first, (proxy) => go(opts(proxy), checks));
    } catch (err) {
      if (!(err instanceof FetchFailure) || err.cause_ !== 'http' || err.status === null) throw err;
      if (err.retryAfterMs !== null && (err.status === 429 || err.status === 503)) {
        // The site says when to come back: a wait, not a block. This session sends nothing more to the host until
        // then (the pool's other sessions may), and the page is retried no earlier (processor.ts backoffDelay).
        await pool.waitFor(session, host, Date.now() + err.retryAfterMs);
        throw err;
      }
      if (spec.retireOnStatus.includes(err.status)) {
        // Retried in a fresh session (BullMQ's attempts bound the retries), though 401/403 alone are not retryable.
        throw await retired(
          `HTTP ${err.status} for ${url}`,
          err.status,
          new FetchFailure('http', `${err.message} (session retired)`, true, err.status, err.retryAfterMs),
        );
      }
      throw err;
    }
  }

  return {
    fetch: (url, withOpts = base, load = fetchPage, run) =>
      viaSession(
        url,
        withOpts,
        async (opts, checks) => {
          const page = await load(url, opts);
          await checks.loggedOut(page.finalUrl, page.status);
          await checks.blocked(page);
          return page;
        },
        run,
      ),
    fetchShared: (url, opts) => viaProxies(nextProxy++, (proxy) => fetchPage(url, { ...opts, proxy })),
    // Checked before a byte of the body is read: a login page is not parsed as a sitemap.
    stream: (url, consume, withOpts = base, run) =>
      viaSession(
        url,
        withOpts,
        (opts, checks) =>
          fetchStream(url, opts, async (res) => {
            await checks.loggedOut(res.finalUrl, res.status);
            return consume(res);
          }),
        run,
      ),
  };

  /** Logs the session in unless it is already; another worker doing it is waited for. A failure is final for the session. */
  async function loggedIn(
    pool: Sessions,
    session: SessionRef,
    state: string,
    login: LoginSpec,
    attempt: () => Promise<string | null>,
  ): Promise<void> {
    const deadline = Date.now() + LOGIN_WAIT_MS;
    for (;;) {
      if (state === 'ok') return;
      if (state.startsWith('failed'))
        throw new FetchFailure('login', `login to ${login.url} ${state} (session ${session.slot})`, false);
      if (state === 'retired') throw new SessionRetired(`session ${session.slot} was retired before it logged in`);
      if (await pool.lockLogin(session, LOGIN_WAIT_MS)) {
        // Read again under the lock: another worker may have logged the session in between this worker's read and
        // its lock (it released the lock when done), and a second login of the same session is a login too many
        // (seen under load: 4 logins for a pool of 2 and 1 block).
        state = await pool.loginState(session);
        if (state !== 'ok' && state !== 'retired' && !state.startsWith('failed')) break;
        await pool.unlockLogin(session);
        continue;
      }
      if (Date.now() > deadline)
        throw new FetchFailure('login', `gave up waiting for the login of session ${session.slot}`, true);
      await delay(100);
      state = await pool.loginState(session);
    }
    try {
      const outcome = await attempt();
      await pool.setLoginState(session, outcome === null ? 'ok' : `failed: ${outcome}`);
      if (outcome === null) log('info', `session ${session.slot} logged in at ${login.url}`);
      else {
        // Said once, by the worker that tried: the others read the state and fail their pages without a message.
        log('error', `login to ${login.url} failed: ${outcome} (session ${session.slot}); its pages fail as 'login'`);
        throw new FetchFailure('login', `login to ${login.url} failed: ${outcome}`, false);
      }
    } finally {
      await pool.unlockLogin(session);
    }
  }

  /** The hosts that may be private while logging in: the login URL is written by the task's author, like a start URL. */
  function withLoginHost(login: LoginSpec): readonly string[] | null {
    return base.privateAllowed === null ? null : [...base.privateAllowed, new URL(login.url).host];
  }

  /** A login whose form a script builds (`login.browser`): in the worker's browser (browser/login.ts). */
  async function logInInBrowser(
    login: LoginSpec,
    inBrowser: (go: (opts: SessionOptions) => Promise<string | null>) => Promise<string | null>,
  ): Promise<string | null> {
    if (!browserLogin)
      throw new FetchFailure(
        'login',
        `the login at ${login.url} runs in a browser (login.browser), and this process has none`,
        false,
      );
    return inBrowser((opts) => browserLogin.logIn(login, opts, task.request.timeoutMs, env));
  }

  /** Null when the login worked, else why not (a status or a missing element; never a value sent). */
  async function logIn(
    login: LoginSpec,
    fetch: (req: { url: string; opts: Partial<FetchOptions> }) => Promise<FetchedPage>,
  ): Promise<string | null> {
    // The credentials go to the login's origin and nowhere else: not to a form action, nor a 307/308 redirect, that
    // names another (a task file is untrusted, and so is the page it points at).
    const loginOrigin = new URL(login.url).origin;
    // The login URL is written by the task's author, like a start URL: its host may be private too.
    const allowed = withLoginHost(login);
    const send = async (url: string, post: FetchOptions['post']): Promise<FetchedPage | string> => {
      try {
        return await fetch({
          url,
          opts: { post, privateAllowed: allowed, keepNonHtml: true, bodyOrigin: loginOrigin },
        });
      } catch (err) {
        if (err instanceof BodyOriginRefused)
          return `the login was redirected (HTTP ${err.status}) to ${err.to}, another origin than login.url's (${loginOrigin}): credentials are sent only to the login's origin`;
        // A proxy down, a timeout, a connection reset say nothing about the credentials: the page fails (and is
        // retried), and the session is not marked as one whose login failed for good.
        if (err instanceof FetchFailure && err.status === null && err.retryable) throw err;
        // Nor does a proxy that refused its own credentials (407): that is the proxy's failure, not the login's.
        if (err instanceof FetchFailure && err.cause_ === 'proxy') throw err;
        if (err instanceof FetchFailure) return err.status !== null ? `HTTP ${err.status}` : err.cause_;
        throw err;
      }
    };
    const missingOf = (names: readonly string[]) =>
      names.length ? `environment variable(s) not set: ${[...new Set(names)].join(', ')}` : null;
    let answer: FetchedPage | string;
    if (login.kind === 'post') {
      if (login.json !== null) {
        const { value, missing } = expandJson(login.json, env);
        if (missingOf(missing)) return missingOf(missing);
        answer = await send(login.url, { contentType: 'application/json', body: JSON.stringify(value) });
      } else {
        const body = new URLSearchParams();
        const missing: string[] = [];
        for (const [k, v] of Object.entries(login.fields)) {
          const e = expandValue(v, env);
          missing.push(...e.missing);
          body.append(k, e.value);
        }
        if (missingOf(missing)) return missingOf(missing);
        answer = await send(login.url, { contentType: 'application/x-www-form-urlencoded', body: body.toString() });
      }
    } else {
      const page = await send(login.url, undefined);
      if (typeof page === 'string') return `${page} loading the login page`;
      const $ = cheerio.load(page.body);
      const form =
        login.formSelector !== null
          ? $(login.formSelector).first()
          : $('form:has(input[type=password])').first().length
            ? $('form:has(input[type=password])').first()
            : $('form').first();
      if (form.length === 0) return `no ${login.formSelector ?? 'form'} on ${page.finalUrl}`;
      // As Scrapy's FormRequest.from_response: the form's own values (its hidden CSRF token) and then ours. The
      // form is read as a `form:` follow reads one (core/request/form.ts).
      const read = readForm(form, page.finalUrl);
      if (!read) return `the form at ${page.finalUrl} is not one a browser would send`;
      const body = new URLSearchParams();
      const ours = new Set(Object.keys(login.fields));
      for (const [name, value] of read.pairs) if (!ours.has(name)) body.append(name, value);
      const missing: string[] = [];
      for (const [k, v] of Object.entries(login.fields)) {
        const e = expandValue(v, env);
        missing.push(...e.missing);
        body.append(k, e.value);
      }
      if (missingOf(missing)) return missingOf(missing);
      const action = read.action;
      const actionOrigin = new URL(action).origin;
      if (actionOrigin !== loginOrigin)
        return `the form at ${page.finalUrl} posts to ${actionOrigin}, another origin than login.url's (${loginOrigin}): credentials are sent only to the login's origin`;
      if (read.method !== 'POST')
        return `the form at ${page.finalUrl} is sent with ${read.method}, and a login is POSTed`;
      answer = await send(action, { contentType: 'application/x-www-form-urlencoded', body: body.toString() });
    }
    if (typeof answer === 'string') return answer;
    const $ = cheerio.load(answer.isHtml ? answer.body : '');
    if (login.checkSelector !== null)
      return $(login.checkSelector).length > 0 ? null : `${answer.finalUrl} has no ${login.checkSelector}`;
    if (login.kind === 'form' && $('input[type=password]').length > 0)
      return `${answer.finalUrl} still shows a password field`;
    return null;
  }
}
