import { redactUrl } from './redact';

// A URL with `user:password@` in it, from a task file's start list or a person's enqueue. Such a URL is stored
// and shown with its page (the pages table, items' `url` fields, Redis), and undici sends no Authorization header
// for it: the password would travel for nothing and be kept everywhere. It is refused, pointing to the settings
// that carry credentials; messages show it redacted.

/** Where credentials go instead (docs/secrets.md). */
export const CREDENTIALS_HINT =
  "a URL is stored and shown with its page (the pages table, items, Redis) and sends no Authorization header: log in with 'login:', or send the credentials in a header (request.headers: { authorization: 'Basic ${CRAWL_STUDIO_BASIC_AUTH}' }); see docs/secrets.md";

/** The refusal of a URL with credentials, the URL redacted. */
export function credentialsMessage(url: string): string {
  return `'${redactUrl(url)}' has a user name or password in it: ${CREDENTIALS_HINT}`;
}
