/**
 * Redacts the credentials of a URL (redis://, postgres://…) for logs and messages.
 *
 * Works on the text, not on a parse: a password with an unencoded '/', '?', '#' or '@' makes the URL unparsable,
 * or parsable with part of the password read as host, port or path (postgres://u:123/ret@h parses with the port
 * 123 and the path "/ret@h"). So the userinfo is taken to run to the last '@' of the whole string; when what it
 * would span holds a '/', '?' or '#' (a password with those, or an '@' later in the path or query) everything
 * between "scheme://" and that '@' is hidden. Over-redacting a path is the price of never printing a secret.
 */
export function redactUrl(url: string): string {
  const scheme = /^[a-z][a-z0-9+.-]*:\/\//i.exec(url);
  if (!scheme) {
    // No authority ("user:pw@host" typed without a scheme, or a path): hide anything before an '@'.
    const at = url.lastIndexOf('@');
    return at < 0 ? url : `***${url.slice(at)}`;
  }
  const head = scheme[0];
  const rest = url.slice(head.length);
  const at = rest.lastIndexOf('@');
  if (at < 0) return url;
  const userinfo = rest.slice(0, at);
  const after = rest.slice(at);
  if (/[/?#\\]/.test(userinfo)) return `${head}***${after}`;
  const colon = userinfo.indexOf(':');
  // "redis://user@host": a name alone is not a secret; "redis://:pw@host" keeps its empty name.
  return colon < 0 ? url : `${head}${userinfo.slice(0, colon)}:***${after}`;
}
