import type { Redis } from '../redis/connect';
import { HtmlPage, TooDeepError } from '../core/extract/dom';
import type { CrawlTask, LoginSpec } from '../core/task/model';
import {
  FetchFailure,
  fetchPage,
  fetchStream,
  type FetchedPage,
  type FetchOptions,
  type StreamedResponse,
} from './fetcher';
import { SessionPool, SessionRetired, type SessionCookies, type SessionRef, type Sessions } from './sessions';
import { SentBack } from './sentBack';
import type { BrowserLogin } from './browser/login';
import { ProxyRotation } from './proxyRotation';
import { logIn, withLoginHost } from './loginForm';
import { loggedIn } from './sessionLogin';

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

type Env = Readonly<Record<string, string | undefined>>;

/** What a request in a session does with its options and checks: makes the request and checks its answer. */
type Go<T> = (opts: SessionOptions, checks: AnswerChecks) => Promise<T>;

/** A session as taken from the pool: its slot, its generation, its login state then. */
type TakenRef = SessionRef & { login: string };

/**
 * The task's access, or null for a task without sessions and proxies. `sessions`: the fleet's pool in Redis (a
 * Redis connection), or a pool of the caller's (the designer's preview keeps one in memory).
 */
export function createAccess(
  task: CrawlTask,
  sessions: Redis | Sessions,
  log: Log,
  base: FetchOptions,
  env: Env = process.env,
  browserLogin?: BrowserLogin,
): Access | null {
  if (!task.session && !task.proxy) return null;
  const pool: Sessions | null = !task.session
    ? null
    : 'take' in sessions
      ? sessions
      : new SessionPool(sessions, task.name, task.session);
  return new TaskAccess(task, pool, new ProxyRotation(task, env, log), { log, base, env, browserLogin });
}

class TaskAccess implements Access {
  private readonly log: Log;
  private readonly base: FetchOptions;
  private readonly env: Env;
  private readonly browserLogin: BrowserLogin | undefined;

  constructor(
    private readonly task: CrawlTask,
    private readonly pool: Sessions | null,
    private readonly proxies: ProxyRotation,
    more: { log: Log; base: FetchOptions; env: Env; browserLogin: BrowserLogin | undefined },
  ) {
    this.log = more.log;
    this.base = more.base;
    this.env = more.env;
    this.browserLogin = more.browserLogin;
  }

  fetch(
    url: string,
    withOpts: FetchOptions = this.base,
    load: PageLoad = fetchPage,
    run?: string,
  ): Promise<FetchedPage> {
    return this.viaSession(
      url,
      withOpts,
      async (opts, checks) => {
        const page = await load(url, opts);
        await checks.loggedOut(page.finalUrl, page.status);
        await checks.blocked(page);
        return page;
      },
      run,
    );
  }

  fetchShared(url: string, opts: FetchOptions): Promise<FetchedPage> {
    return this.proxies.via(this.proxies.turn(), (proxy) => fetchPage(url, { ...opts, proxy }));
  }

  stream<T>(
    url: string,
    consume: (res: StreamedResponse) => Promise<T>,
    withOpts: FetchOptions = this.base,
    run?: string,
  ): Promise<T> {
    return this.viaSession(
      url,
      withOpts,
      // Checked before a byte of the body is read: a login page is not parsed as a sitemap.
      (opts, checks) =>
        fetchStream(url, opts, async (res) => {
          await checks.loggedOut(res.finalUrl, res.status);
          return consume(res);
        }),
      run,
    );
  }

  /**
   * One request the way a page is fetched: in a session of the pool (logged in first), with its cookies, through the
   * proxies; the session retired when the answer looks like a block. `go` makes the request and checks its answer.
   * A session retired under the page before its request was sent costs the page nothing: it goes to another session.
   */
  private async viaSession<T>(url: string, withOpts: FetchOptions, go: Go<T>, run = ''): Promise<T> {
    const pool = this.pool;
    if (!pool)
      return this.proxies.via(this.proxies.turn(), (proxy) =>
        go({ ...withOpts, proxy, cookies: undefined }, NO_CHECKS),
      );
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
        return await this.inSession(pool, taken, url, host, withOpts, go);
      } catch (err) {
        if (!(err instanceof SessionRetired)) throw err;
        // Each round found a session retired by another page meanwhile: past a few, the page waits its turn again.
        if (round > pool.spec.pool + 1) throw new SentBack(err.message, 0, err);
      }
    }
  }

  /** One request in `session` (see viaSession). */
  private async inSession<T>(
    pool: Sessions,
    session: TakenRef,
    url: string,
    host: string,
    withOpts: FetchOptions,
    go: Go<T>,
  ): Promise<T> {
    const first = this.task.proxy?.rotate === 'per-request' ? this.proxies.turn() : session.slot;
    const opts = (proxy: string | undefined): SessionOptions => ({
      ...withOpts,
      proxy,
      cookies: pool.cookies(session),
    });
    await this.loggedIn(pool, session, first);
    try {
      return await this.proxies.via(first, (proxy) => go(opts(proxy), this.checks(pool, session, url)));
    } catch (err) {
      throw await this.httpFailure(pool, session, url, host, err);
    }
  }

  /** The session logged in first, when the task has a login. It is sent with the task's options, not the page's. */
  private async loggedIn(pool: Sessions, session: TakenRef, first: number): Promise<void> {
    const login = this.task.login;
    if (!login) return;
    const { base, env } = this;
    const attempt = login.browser
      ? () =>
          this.logInInBrowser(login, (lo) =>
            this.proxies.via(first, (proxy) =>
              lo({ ...base, privateAllowed: withLoginHost(base, login), proxy, cookies: pool.cookies(session) }),
            ),
          )
      : () =>
          logIn(login, base, env, (fo) =>
            this.proxies.via(first, (proxy) =>
              fetchPage(fo.url, { ...base, proxy, cookies: pool.cookies(session), ...fo.opts }),
            ),
          );
    await loggedIn(pool, session, session.login, login, attempt, this.log);
  }

  /** A login whose form a script builds (`login.browser`): in the worker's browser (browser/login.ts). */
  private async logInInBrowser(
    login: LoginSpec,
    inBrowser: (go: (opts: SessionOptions) => Promise<string | null>) => Promise<string | null>,
  ): Promise<string | null> {
    const browserLogin = this.browserLogin;
    if (!browserLogin)
      throw new FetchFailure(
        'login',
        `the login at ${login.url} runs in a browser (login.browser), and this process has none`,
        false,
      );
    return inBrowser((opts) => browserLogin.logIn(login, opts, this.task.request.timeoutMs, this.env));
  }

  /** What a page's answer in `session` is checked for: led back to the login page, or a block. */
  private checks(pool: Sessions, session: TakenRef, url: string): AnswerChecks {
    const { task } = this;
    const spec = pool.spec;
    return {
      loggedOut: async (finalUrl, status) => {
        // Sent back to the login page: the site ended the session's login (expired, or logged out by a block).
        const login = task.login;
        if (
          login !== null &&
          new URL(finalUrl).pathname === new URL(login.url).pathname &&
          new URL(url).pathname !== new URL(login.url).pathname
        ) {
          const why = `${url} led back to the login page`;
          throw await this.retired(pool, session, why, status, sessionFailure(why, status));
        }
      },
      blocked: async (page) => {
        if (!looksBlocked(page, spec.retireOnSelector)) return;
        const why = `${url} answered like a block (${spec.retireOnSelector})`;
        throw await this.retired(pool, session, why, page.status, sessionFailure(why, page.status));
      },
    };
  }

  /** What a failed request in `session` throws: an HTTP status may retire the session or make it wait for the host. */
  private async httpFailure(
    pool: Sessions,
    session: TakenRef,
    url: string,
    host: string,
    err: unknown,
  ): Promise<unknown> {
    if (!(err instanceof FetchFailure) || err.cause_ !== 'http' || err.status === null) return err;
    if (err.retryAfterMs !== null && (err.status === 429 || err.status === 503)) {
      // The site says when to come back: a wait, not a block. This session sends nothing more to the host until
      // then (the pool's other sessions may), and the page is retried no earlier (pageFailure.ts backoffDelay).
      await pool.waitFor(session, host, Date.now() + err.retryAfterMs);
      return err;
    }
    if (pool.spec.retireOnStatus.includes(err.status)) {
      // Retried in a fresh session (BullMQ's attempts bound the retries), though 401/403 alone are not retryable.
      return this.retired(
        pool,
        session,
        `HTTP ${err.status} for ${url}`,
        err.status,
        new FetchFailure('http', `${err.message} (session retired)`, true, err.status, err.retryAfterMs),
      );
    }
    return err;
  }

  /** The failure of a page whose answer is a block: its own, when it retired the session; else the session's. */
  private async retired(
    pool: Sessions,
    session: TakenRef,
    why: string,
    status: number | null,
    failure: FetchFailure,
  ): Promise<Error> {
    if (await pool.retire(session)) {
      this.log('info', `session ${session.slot} retired: ${why}`);
      return failure;
    }
    // Another page retired the session first: this answer is that block, seen again, not something of this page.
    return new SentBack(
      `${why}, in session ${session.slot}, which another page had retired already`,
      0,
      new FetchFailure('session', `${why}; session retired`, true, status),
    );
  }
}

function sessionFailure(why: string, status: number | null): FetchFailure {
  return new FetchFailure('session', `${why}; session retired`, true, status);
}

/**
 * Parsed as the analysis thread parses (HtmlPage: capped nesting, no quadratic stray end tags): this runs on the
 * worker's main thread, which renews every job's lock. A page too deep to parse is no sign of a block: the analysis
 * fails it with that reason.
 */
function looksBlocked(page: FetchedPage, selector: string | null): boolean {
  if (selector === null || !page.isHtml) return false;
  try {
    return HtmlPage.parse(page.body).$(selector).length > 0;
  } catch (err) {
    if (err instanceof TooDeepError) return false;
    throw err;
  }
}
