import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { isIP } from 'node:net';
import type { IncomingHttpHeaders } from 'node:http';

// Who may read and who may act on the monitor. Reading needs a Host header the monitor answers to (a page on another
// site reaching a loopback server through DNS rebinding sends its own name); acting needs the token, in a header a
// page on another site cannot set (no cookie: a cross-site form or image request carries none of it).

/** Header names an action's token may come in. */
const TOKEN_HEADER = 'x-crawl-studio-token';

/** A fresh token: 192 random bits, URL-safe. */
export function generateToken(): string {
  return randomBytes(24).toString('base64url');
}

/** The token a request carries: `Authorization: Bearer T` or `X-Crawl-Studio-Token: T`; null without one. */
export function tokenOf(headers: IncomingHttpHeaders): string | null {
  const auth = headers.authorization;
  if (typeof auth === 'string') {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(auth);
    if (m) return m[1]!;
  }
  const h = headers[TOKEN_HEADER];
  return typeof h === 'string' && h.length > 0 ? h : null;
}

/**
 * Compares in constant time: both sides are hashed first, so neither their contents nor their lengths change how
 * long the comparison takes.
 */
export function tokensEqual(given: string, expected: string): boolean {
  const digest = (s: string) => createHash('sha256').update(s, 'utf8').digest();
  return timingSafeEqual(digest(given), digest(expected));
}

/** Whether an address or name to bind or to be reached at is this machine's loopback. */
export function isLoopback(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  if (h === 'localhost' || h.endsWith('.localhost')) return true;
  if (isIP(h) === 4) return h.startsWith('127.');
  return h === '::1' || h === '0:0:0:0:0:0:0:1';
}

/** The name part of a Host header (`name:port`, `[v6]:port`), lower case; null when it is not one. */
export function hostName(header: string | undefined): string | null {
  if (!header) return null;
  const h = header.trim().toLowerCase();
  const v6 = /^\[([0-9a-f:.]+)\](?::\d{1,5})?$/.exec(h);
  if (v6) return v6[1]!;
  const m = /^([a-z0-9.-]+)(?::\d{1,5})?$/.exec(h);
  return m ? m[1]!.replace(/\.$/, '') : null;
}

/**
 * The names the monitor answers to: the address it is bound to, this machine's loopback names when bound to
 * loopback or to every interface, and whatever the operator allowed (`--allow-host`, e.g. the name a proxy or
 * Prometheus uses).
 */
export function allowedHosts(bind: string, extra: readonly string[]): ReadonlySet<string> {
  const out = new Set<string>([
    bind.replace(/^\[|\]$/g, '').toLowerCase(),
    ...extra.map((h) => h.trim().toLowerCase()).filter(Boolean),
  ]);
  if (isLoopback(bind) || bind === '0.0.0.0' || bind === '::')
    for (const h of ['localhost', '127.0.0.1', '::1']) out.add(h);
  return out;
}

export function hostAllowed(header: string | undefined, allowed: ReadonlySet<string>): boolean {
  const name = hostName(header);
  return name !== null && allowed.has(name);
}

/**
 * A monitor reachable from other machines must not take actions from whoever reads a token off a terminal it was
 * never shown on: bound beyond loopback, the operator gives the token (no generated one).
 */
export function bindRefusal(bind: string, tokenGiven: boolean): string | null {
  if (isLoopback(bind) || tokenGiven) return null;
  return `--bind ${bind} is reachable from other machines: give the actions' token ($CRAWL_STUDIO_MONITOR_TOKEN or --token) to bind beyond loopback`;
}
