import { isIP } from 'node:net';
import type { BrowserContext } from 'playwright-core';
import { Cookie } from 'tough-cookie';
import type { SessionCookies } from '../sessions';

// A session's cookies in a browser context, both ways. The session (Redis, tough-cookie's JSON) is the truth: its
// cookies go into the page's fresh context before the page loads, and what changed in the context by the time the
// page is read (cookies its responses and its scripts set, changed or deleted) goes back, cookie by cookie, so the
// next page of the session, fetched or rendered, on any worker, sends them.

type BrowserCookie = Awaited<ReturnType<BrowserContext['cookies']>>[number];
type NewCookie = Parameters<BrowserContext['addCookies']>[0][number];

const SAME_SITE = { strict: 'Strict', lax: 'Lax', none: 'None' } as const;

/** A session cookie as Playwright adds it: a leading dot makes a domain cookie, none a host-only one. */
export function toBrowser(c: Cookie): NewCookie | null {
  if (!c.domain) return null;
  const expiry = c.expiryTime();
  const sameSite =
    typeof c.sameSite === 'string' ? SAME_SITE[c.sameSite.toLowerCase() as keyof typeof SAME_SITE] : undefined;
  return {
    name: c.key,
    value: c.value,
    domain: c.hostOnly || isIP(c.domain) ? c.domain : `.${c.domain}`,
    path: c.path ?? '/',
    expires: expiry === undefined || expiry === Infinity ? -1 : Math.floor(expiry / 1000),
    httpOnly: c.httpOnly,
    secure: c.secure,
    ...(sameSite ? { sameSite } : {}),
  };
}

/** A cookie read from a context, for the session. */
export function fromBrowser(b: BrowserCookie): Cookie {
  const domainCookie = b.domain.startsWith('.');
  return new Cookie({
    key: b.name,
    value: b.value,
    domain: domainCookie ? b.domain.slice(1) : b.domain,
    hostOnly: !domainCookie,
    path: b.path,
    expires: b.expires === -1 ? 'Infinity' : new Date(b.expires * 1000),
    httpOnly: b.httpOnly,
    secure: b.secure,
    sameSite: b.sameSite.toLowerCase(),
    creation: new Date(),
  });
}

const identity = (b: BrowserCookie) => `${b.domain.replace(/^\./, '')};${b.path};${b.name}`;
const state = (b: BrowserCookie) =>
  `${b.value}\u0000${Math.round(b.expires)}\u0000${b.httpOnly}\u0000${b.secure}\u0000${b.sameSite}`;

/** What changed between two reads of a context's cookies: cookies set or changed, and cookies gone. */
export function cookieChanges(
  before: readonly BrowserCookie[],
  after: readonly BrowserCookie[],
): { set: BrowserCookie[]; gone: BrowserCookie[] } {
  const was = new Map(before.map((b) => [identity(b), b]));
  const now = new Map(after.map((b) => [identity(b), b]));
  return {
    set: after.filter((b) => was.get(identity(b)) === undefined || state(was.get(identity(b))!) !== state(b)),
    gone: before.filter((b) => !now.has(identity(b))),
  };
}

/**
 * Puts the session's cookies into `context` and returns a function that writes back what changed. The comparison is
 * made against the context's own reading of the cookies it was given (Chromium fills in defaults), so a page that
 * changed nothing writes nothing.
 */
export async function lendCookies(
  context: BrowserContext,
  session: SessionCookies,
  url: string,
): Promise<() => Promise<void>> {
  const given = (await session.all(url)).map(toBrowser).filter((c): c is NewCookie => c !== null);
  if (given.length) {
    try {
      await context.addCookies(given);
    } catch {
      // One cookie Chromium will not take (SameSite=None without Secure, say) fails the whole call: the others go
      // in one by one.
      for (const c of given) await context.addCookies([c]).catch(() => undefined);
    }
  }
  const before = await context.cookies();
  return async () => {
    const { set, gone } = cookieChanges(before, await context.cookies());
    if (set.length || gone.length) await session.update(set.map(fromBrowser), gone.map(fromBrowser));
  };
}
