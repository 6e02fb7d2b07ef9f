import { subscribe } from 'node:diagnostics_channel';

// When a request is on the wire: undici publishes 'undici:client:sendHeaders' once it has written a request's
// headers to its socket, for every request of the process. The host gate needs that moment (frontier/politeness.ts
// sent), not the moment the request was granted: what lies between (a fetch slot, a session's login, a busy event
// loop) would otherwise shorten the gap to the host's next request.

type Waiter = () => void;

const waiting = new Map<string, Waiter[]>();
let subscribed = false;

interface SentMessage {
  readonly request: { readonly origin?: string | URL; readonly path: string };
}

/** A request as its URL: through an HTTP proxy its path is the absolute URL; else the origin and path. */
function keyOf(origin: string, path: string): string {
  return /^https?:\/\//i.test(path) ? path : `${origin}${path}`;
}

function onSent(message: unknown): void {
  const { request } = message as SentMessage;
  const key = keyOf(String(request.origin ?? ''), request.path);
  const list = waiting.get(key);
  const first = list?.shift();
  if (list && list.length === 0) waiting.delete(key);
  first?.();
}

/**
 * Calls `sent` once when this process writes the headers of a request for `url` (its first hop, as
 * fetcher.ts requestVia sends it). Returns a function that forgets the wait (after the fetch, sent or not).
 */
export function whenSent(url: string, sent: () => void): () => void {
  if (!subscribed) {
    subscribe('undici:client:sendHeaders', onSent);
    subscribed = true;
  }
  const u = new URL(url);
  const key = keyOf(u.origin, `${u.pathname}${u.search}`);
  let called = false;
  const once: Waiter = () => {
    if (called) return;
    called = true;
    sent();
  };
  waiting.set(key, [...(waiting.get(key) ?? []), once]);
  return () => {
    const list = waiting.get(key);
    if (!list) return;
    const rest = list.filter((w) => w !== once);
    if (rest.length > 0) waiting.set(key, rest);
    else waiting.delete(key);
  };
}
