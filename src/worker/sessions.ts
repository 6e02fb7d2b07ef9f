import { randomUUID } from 'node:crypto';
import type { Redis } from '../redis/connect';
import { Cookie, CookieJar, MemoryCookieStore } from 'tough-cookie';
import type { SessionSpec } from '../core/task/model';
import { taskKeys } from '../frontier/keys';
import { withScripts, type CrawlScripts } from '../frontier/scripts';
import { FetchFailure, type CookieAccess } from './fetcher';

// The session pool of a task, in Redis so every worker on every machine shares it (as Crawlee's SessionPool, but
// not per process). A session is a hash: `id` (which generation of the slot it is), `pages`, `login` and one field
// per cookie, `c:<domain>;<path>;<name>` -> the cookie's JSON (tough-cookie's Cookie.toJSON). One field a cookie,
// not one serialised jar: two workers setting cookies in the same session at once both keep theirs, where a
// read-modify-write of the whole jar would lose one. tough-cookie decides RFC 6265 matters (which Set-Cookie a URL
// may set, which cookies a URL gets, expiry); Redis only keeps them.
//
// Retiring deletes the hash only if it is still the generation the caller used (lua/sessionRetire.lua), so a
// block seen by ten workers at once retires a session once, not its replacement nine times; cookie writes check the
// generation the same way, so a late response cannot put a blocked session's cookies into the new one.

/**
 * A session's cookies for a browser context, which applies RFC 6265 itself: every live cookie goes in, and what the
 * page's scripts and responses changed comes back (see browser/cookies.ts).
 */
export interface SessionCookies extends CookieAccess {
  /** The session's cookies that have not expired, for rendering `url`. */
  all(url: string): Promise<Cookie[]>;
  /** Sets `set` and deletes `gone`, field by field, unless the session was retired meanwhile. */
  update(set: readonly Cookie[], gone: readonly Cookie[]): Promise<void>;
}

/** The hash field of a cookie: one per domain, path and name, as RFC 6265 identifies a cookie. */
export function cookieField(c: Cookie): string {
  return `c:${c.domain};${c.path};${c.key}`;
}

/**
 * A stored cookie's place among those this process stored (a property of its JSON beside tough-cookie's): RFC 6265
 * 5.4 sends cookies of equal paths oldest first, their creation has millisecond resolution, and the session hash
 * keeps no order, so cookies stored in one millisecond are told apart by it. Two processes' cookies of one
 * millisecond are concurrent responses', with no order to keep.
 */
const STORED_ORDER = 'csOrder';
let storedOrder = 0;

/** A cookie as a session field's value: tough-cookie's JSON and its stored order. */
function storedCookie(c: Cookie): string {
  return JSON.stringify({ ...c.toJSON(), [STORED_ORDER]: ++storedOrder });
}

/**
 * A session's stored cookies, made in the order they were stored: tough-cookie breaks a tie of path and creation by
 * the order its Cookie objects were made (creationIndex).
 */
function storedCookies(values: readonly string[]): Cookie[] {
  const parsed: { json: Record<string, unknown>; creation: number; order: number }[] = [];
  for (const v of values) {
    let json: unknown;
    try {
      json = JSON.parse(v);
    } catch {
      continue;
    }
    if (!json || typeof json !== 'object') continue;
    const o = json as Record<string, unknown>;
    const creation = typeof o.creation === 'string' ? Date.parse(o.creation) : NaN;
    parsed.push({ json: o, creation: Number.isNaN(creation) ? 0 : creation, order: Number(o[STORED_ORDER]) || 0 });
  }
  parsed.sort((a, b) => a.creation - b.creation || a.order - b.order);
  const out: Cookie[] = [];
  for (const p of parsed) {
    const c = Cookie.fromJSON(p.json);
    if (c) out.push(c);
  }
  return out;
}

export interface SessionRef {
  readonly slot: number;
  readonly id: string;
}

/** The field of a session that says until when it waits before its next request to `host` (Retry-After). */
function waitField(host: string): string {
  return `w:${host}`;
}

/**
 * The session a page was to use was retired (by another page, for a block) before the page's request was sent: the
 * page did nothing wrong, and goes to another session (access.ts) without spending an attempt.
 */
export class SessionRetired extends FetchFailure {
  constructor(message: string) {
    super('session', message, true);
  }
}

/** A session for a page, or how long every session of the pool still waits out a Retry-After from the page's host. */
export type TakenSession = (SessionRef & { readonly login: string }) | { readonly waitMs: number };

/** What access.ts needs of a session pool: the fleet's in Redis (SessionPool), or one in memory (MemorySessions). */
export interface Sessions {
  readonly spec: SessionSpec;
  /**
   * A session for a page of `host` in `run` (a session of another run is started afresh; '' takes any): one that
   * is not waiting out a Retry-After from it, when there is one.
   */
  take(host: string, run?: string): Promise<TakenSession>;
  retire(s: SessionRef): Promise<boolean>;
  /** The session sends nothing to `host` before `untilMs` (a Retry-After); the other sessions may. */
  waitFor(s: SessionRef, host: string, untilMs: number): Promise<void>;
  loginState(s: SessionRef): Promise<string>;
  setLoginState(s: SessionRef, state: string): Promise<void>;
  lockLogin(s: SessionRef, ms: number): Promise<boolean>;
  unlockLogin(s: SessionRef): Promise<void>;
  cookies(s: SessionRef): SessionCookies;
}

export class SessionPool implements Sessions {
  private readonly keys;
  private readonly redis: Redis & CrawlScripts;
  constructor(
    redis: Redis,
    task: string,
    readonly spec: SessionSpec,
  ) {
    this.redis = withScripts(redis);
    this.keys = taskKeys(task);
  }

  /**
   * A session for one page of `host`: the first slot from a random one on that is not waiting out a Retry-After from
   * the host, replaced first when it has fetched its maxPages.
   */
  async take(host: string, run = ''): Promise<TakenSession> {
    const pool = this.spec.pool;
    const first = Math.floor(Math.random() * pool);
    const slots = Array.from({ length: pool }, (_, i) => (first + i) % pool);
    const keys = slots.map((slot) => this.keys.session(slot));
    for (;;) {
      const [i, id, pages, login] = await this.redis.csSessionTake(
        keys.length,
        ...keys,
        randomUUID(),
        Date.now(),
        waitField(host),
        run,
      );
      if (i < 0) return { waitMs: Math.max(0, Number(id) - Date.now()) };
      const slot = slots[i]!;
      if (this.spec.maxPages !== null && pages! > this.spec.maxPages) {
        await this.retire({ slot, id });
        continue;
      }
      return { slot, id, login: login! };
    }
  }

  async waitFor(s: SessionRef, host: string, untilMs: number): Promise<void> {
    await this.redis.csSessionWait(this.keys.session(s.slot), s.id, waitField(host), Math.ceil(untilMs));
  }

  /** Retires a session (the next page in its slot starts a new one, logged in afresh). True when this call did. */
  async retire(s: SessionRef): Promise<boolean> {
    return (await this.redis.csSessionRetire(this.keys.session(s.slot), s.id)) === 1;
  }

  async loginState(s: SessionRef): Promise<string> {
    const [id, login] = await this.redis.hmget(this.keys.session(s.slot), 'id', 'login');
    return id === s.id ? (login ?? '') : 'retired';
  }

  async setLoginState(s: SessionRef, state: string): Promise<void> {
    await this.redis.csSessionSet(this.keys.session(s.slot), s.id, 'login', state);
  }

  /** Whether this worker may log the session in (a short lock; the others wait for `login` to be set). */
  async lockLogin(s: SessionRef, ms: number): Promise<boolean> {
    return (await this.redis.set(this.keys.sessionLogin(s.slot), s.id, 'PX', ms, 'NX')) === 'OK';
  }

  async unlockLogin(s: SessionRef): Promise<void> {
    await this.redis.del(this.keys.sessionLogin(s.slot));
  }

  /** The session's cookies for the fetcher and the browser. */
  cookies(s: SessionRef): SessionCookies {
    const key = this.keys.session(s.slot);
    const read = async (url: string): Promise<Cookie[]> => {
      const fields = await this.redis.hgetall(key);
      // Retired by another worker meanwhile: sending no cookies would fetch the page logged out (a login form
      // read as content), so the page is retried in a live session instead.
      if (fields.id !== s.id) throw new SessionRetired(`session ${s.slot} was retired before ${url} was sent in it`);
      return storedCookies(Object.entries(fields).flatMap(([k, v]) => (k.startsWith('c:') ? [v] : [])));
    };
    return {
      header: async (url) => {
        const store = new MemoryCookieStore();
        for (const c of await read(url)) await store.putCookie(c);
        const header = await new CookieJar(store).getCookieString(url);
        return header || null;
      },
      all: async (url) => (await read(url)).filter((c) => c.TTL() > 0),
      update: async (set, gone) => {
        const args: string[] = [];
        for (const c of gone) args.push(cookieField(c), '');
        for (const c of set) args.push(cookieField(c), c.TTL() <= 0 ? '' : storedCookie(c));
        if (args.length) await this.redis.csSessionSet(key, s.id, ...args);
      },
      store: async (url, setCookie) => {
        // A jar of its own for each response: tough-cookie checks each Set-Cookie against the URL (domain, path,
        // Secure, public suffixes) and parses its expiry; what it accepts is written field by field.
        const jar = new CookieJar(new MemoryCookieStore());
        const args: string[] = [];
        // In the order the response set them: their stored order keeps it (storedCookie). Moving a cookie's
        // creation a millisecond on per cookie, as this did, put it in the future, where the next response's
        // cookies, made within those milliseconds, were older than it and sent ahead of it.
        for (const header of setCookie) {
          const c = await jar.setCookie(header, url, { ignoreError: true }).catch(() => undefined);
          if (!c) continue;
          args.push(cookieField(c), c.TTL() <= 0 ? '' : storedCookie(c));
        }
        if (args.length) await this.redis.csSessionSet(key, s.id, ...args);
      },
    };
  }
}

/**
 * One session held in this process's memory, for the designer's preview: a page is fetched as a worker fetches it
 * (logged in, with the session's cookies), without a Redis. Retiring starts a fresh session (and a fresh login).
 */
export class MemorySessions implements Sessions {
  private id = randomUUID();
  private login = '';
  private jar = new CookieJar(new MemoryCookieStore());
  private locked = false;

  constructor(readonly spec: SessionSpec) {}

  private waits = new Map<string, number>();

  // In memory, every answer is at hand: the Sessions interface is asynchronous for the pool in Redis.
  take(host: string): Promise<TakenSession> {
    const till = this.waits.get(host) ?? 0;
    if (till > Date.now()) return Promise.resolve({ waitMs: till - Date.now() });
    return Promise.resolve({ slot: 0, id: this.id, login: this.login });
  }

  waitFor(s: SessionRef, host: string, untilMs: number): Promise<void> {
    if (s.id === this.id) this.waits.set(host, Math.max(this.waits.get(host) ?? 0, untilMs));
    return Promise.resolve();
  }

  retire(s: SessionRef): Promise<boolean> {
    if (s.id !== this.id) return Promise.resolve(false);
    this.id = randomUUID();
    this.login = '';
    this.jar = new CookieJar(new MemoryCookieStore());
    this.waits = new Map();
    return Promise.resolve(true);
  }

  loginState(s: SessionRef): Promise<string> {
    return Promise.resolve(s.id === this.id ? this.login : 'retired');
  }

  setLoginState(s: SessionRef, state: string): Promise<void> {
    if (s.id === this.id) this.login = state;
    return Promise.resolve();
  }

  lockLogin(): Promise<boolean> {
    if (this.locked) return Promise.resolve(false);
    this.locked = true;
    return Promise.resolve(true);
  }

  unlockLogin(): Promise<void> {
    this.locked = false;
    return Promise.resolve();
  }

  cookies(s: SessionRef): SessionCookies {
    const current = () => {
      if (s.id !== this.id) throw new SessionRetired(`session ${s.slot} was retired while it was used`);
      return this.jar;
    };
    // The preview renders with the same cookies it fetches with (its Browser toggle in a task with `login`).
    const store = () => current().store as MemoryCookieStore;
    return {
      header: async (url) => (await current().getCookieString(url)) || null,
      all: async () => (await store().getAllCookies()).filter((c) => c.TTL() > 0),
      update: async (set, gone) => {
        const st = store();
        for (const c of gone) if (c.domain && c.path) await st.removeCookie(c.domain, c.path, c.key);
        for (const c of set) await st.putCookie(c);
      },
      store: async (url, setCookie) => {
        const jar = current();
        for (const header of setCookie) await jar.setCookie(header, url, { ignoreError: true }).catch(() => undefined);
      },
    };
  }
}
