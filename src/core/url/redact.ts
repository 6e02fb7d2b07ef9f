/**
 * Redacts the credentials of a URL (redis://, redis+sentinel://, postgres://…) for logs and messages.
 *
 * Works on the text, not on a parse: a password with an unencoded '/', '?', '#' or '@' makes the URL unparsable,
 * or parsable with part of the password read as host, port or path (postgres://u:123/ret@h parses with the port
 * 123 and the path "/ret@h"). So the userinfo is taken to run to the last '@' of the whole string; when what it
 * would span holds a '/', '?' or '#' (a password with those, or an '@' later in the path or query) everything
 * between "scheme://" and that '@' is hidden. Over-redacting a path is the price of never printing a secret.
 *
 * Passwords in the query (`?sentinelPassword=…`, libpq's `?password=…`, `sslpassword`, a `token`, a `secret`)
 * are hidden too, each up to the next `&name=` or to the end: an unencoded '&' or '#' in such a value hides what
 * follows instead of showing the rest of the value. Both rules read the original text and whatever either hides
 * is hidden, so an '@' inside a query password cannot make one rule show what the other would hide.
 */
export function redactUrl(url: string): string {
  const hidden = [...userinfoSecret(url), ...querySecrets(url)].sort((a, b) => a[0] - b[0]);
  let out = '';
  let at = 0;
  for (const [start, end] of hidden) {
    if (end <= at) continue;
    if (start > at) out += url.slice(at, start);
    if (!out.endsWith('***')) out += '***';
    at = end;
  }
  return out + url.slice(at);
}

type Span = readonly [start: number, end: number];

function userinfoSecret(url: string): Span[] {
  const scheme = /^[a-z][a-z0-9+.-]*:\/\//i.exec(url);
  const at = url.lastIndexOf('@');
  // No authority ("user:pw@host" typed without a scheme, or a path): hide anything before an '@'.
  if (!scheme) return at < 0 ? [] : [[0, at]];
  const head = scheme[0].length;
  if (at < head) return [];
  const userinfo = url.slice(head, at);
  if (/[/?#\\]/.test(userinfo)) return [[head, at]];
  const colon = userinfo.indexOf(':');
  // "redis://user@host": a name alone is not a secret; "redis://:pw@host" keeps its empty name.
  return colon < 0 ? [] : [[head + colon + 1, at]];
}

/** A query parameter whose value is a secret, by its name (case-insensitive). */
const SECRET_PARAM = /(?:pass|secret|token|auth|key)/i;

function querySecrets(url: string): Span[] {
  const q = url.indexOf('?');
  if (q < 0) return [];
  const spans: Span[] = [];
  // A parameter starts after '?' or at an '&' followed by "name=": a value's own unencoded '&' (not followed by a
  // name and '=') stays inside it.
  const starts = [q + 1, ...[...url.slice(q + 1).matchAll(/&(?=[A-Za-z0-9_.%-]*=)/g)].map((m) => q + 1 + m.index + 1)];
  starts.forEach((start, i) => {
    const end = i + 1 < starts.length ? starts[i + 1]! - 1 : url.length;
    const param = url.slice(start, end);
    const eq = param.indexOf('=');
    if (eq >= 0 && eq + 1 < param.length && SECRET_PARAM.test(param.slice(0, eq))) spans.push([start + eq + 1, end]);
  });
  return spans;
}
