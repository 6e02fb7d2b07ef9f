import type { IncomingMessage } from 'node:http';

// What the tests' local sites read from a request: its cookies and its body.

/** The request's cookies by name (the Cookie header, split as a browser joins it). */
export function cookiesOf(req: IncomingMessage): Map<string, string> {
  const out = new Map<string, string>();
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0) out.set(part.slice(0, eq).trim(), part.slice(eq + 1).trim());
  }
  return out;
}

/** The whole request body, as text. */
export async function requestBody(req: IncomingMessage): Promise<string> {
  let s = '';
  for await (const chunk of req) s += chunk;
  return s;
}
