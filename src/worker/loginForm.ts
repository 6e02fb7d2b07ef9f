import type * as cheerio from 'cheerio/slim';
import { HtmlPage, TooDeepError } from '../core/extract/dom';
import { readForm } from '../core/request/form';
import type { LoginSpec } from '../core/task/model';
import { expandJson, expandValue } from '../core/task/secrets';
import { BodyOriginRefused, FetchFailure, type FetchedPage, type FetchOptions } from './fetcher';

// A login over HTTP (`login` without `browser`): its credentials POSTed, as a form or JSON, or filled into the login
// page's own form; then whether it worked. Never a value sent in what it says.

type Env = Readonly<Record<string, string | undefined>>;

/** How the login's requests are sent: in the session, through its proxy (access.ts). */
export type LoginFetch = (req: { url: string; opts: Partial<FetchOptions> }) => Promise<FetchedPage>;

/** A request of the login: its answer, or why the login failed. */
type Send = (url: string, post: FetchOptions['post']) => Promise<FetchedPage | string>;

/** The hosts that may be private while logging in: the login URL is written by the task's author, like a start URL. */
export function withLoginHost(base: FetchOptions, login: LoginSpec): readonly string[] | null {
  return base.privateAllowed === null ? null : [...base.privateAllowed, new URL(login.url).host];
}

/** Null when the login worked, else why not (a status or a missing element; never a value sent). */
export async function logIn(login: LoginSpec, base: FetchOptions, env: Env, fetch: LoginFetch): Promise<string | null> {
  const send = sender(login, base, fetch);
  const answer = login.kind === 'post' ? await postLogin(login, env, send) : await formLogin(login, env, send);
  if (typeof answer === 'string') return answer;
  const $ = parsed(answer.isHtml ? answer.body : '');
  if (typeof $ === 'string') return `${answer.finalUrl} ${$}`;
  if (login.checkSelector !== null)
    return $(login.checkSelector).length > 0 ? null : `${answer.finalUrl} has no ${login.checkSelector}`;
  if (login.kind === 'form' && $('input[type=password]').length > 0)
    return `${answer.finalUrl} still shows a password field`;
  return null;
}

function sender(login: LoginSpec, base: FetchOptions, fetch: LoginFetch): Send {
  // The credentials go to the login's origin and nowhere else: not to a form action, nor a 307/308 redirect, that
  // names another (a task file is untrusted, and so is the page it points at).
  const loginOrigin = new URL(login.url).origin;
  // The login URL is written by the task's author, like a start URL: its host may be private too.
  const allowed = withLoginHost(base, login);
  return async (url, post) => {
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
}

/** The variables a login's values name that are not set, said; null when all are. */
function missingOf(names: readonly string[]): string | null {
  return names.length ? `environment variable(s) not set: ${[...new Set(names)].join(', ')}` : null;
}

/** `login.fields` appended to `body`, their variables filled in; the names of those that are not set. */
function appendFields(login: LoginSpec, env: Env, body: URLSearchParams): string[] {
  const missing: string[] = [];
  for (const [k, v] of Object.entries(login.fields)) {
    const e = expandValue(v, env);
    missing.push(...e.missing);
    body.append(k, e.value);
  }
  return missing;
}

/** `kind: post`: the credentials POSTed to the login URL, as JSON or as a form. */
async function postLogin(login: LoginSpec, env: Env, send: Send): Promise<FetchedPage | string> {
  if (login.json !== null) {
    const { value, missing } = expandJson(login.json, env);
    const unset = missingOf(missing);
    if (unset) return unset;
    return send(login.url, { contentType: 'application/json', body: JSON.stringify(value) });
  }
  const body = new URLSearchParams();
  const unset = missingOf(appendFields(login, env, body));
  if (unset) return unset;
  return send(login.url, { contentType: 'application/x-www-form-urlencoded', body: body.toString() });
}

/** `kind: form`: the login page's form, its own values (its hidden CSRF token) and then ours, sent as it says. */
async function formLogin(login: LoginSpec, env: Env, send: Send): Promise<FetchedPage | string> {
  const loginOrigin = new URL(login.url).origin;
  const page = await send(login.url, undefined);
  if (typeof page === 'string') return `${page} loading the login page`;
  const $ = parsed(page.body);
  if (typeof $ === 'string') return `${login.url} ${$}`;
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
  const unset = missingOf(appendFields(login, env, body));
  if (unset) return unset;
  const action = read.action;
  const actionOrigin = new URL(action).origin;
  if (actionOrigin !== loginOrigin)
    return `the form at ${page.finalUrl} posts to ${actionOrigin}, another origin than login.url's (${loginOrigin}): credentials are sent only to the login's origin`;
  if (read.method !== 'POST') return `the form at ${page.finalUrl} is sent with ${read.method}, and a login is POSTed`;
  return send(action, { contentType: 'application/x-www-form-urlencoded', body: body.toString() });
}

/**
 * A login page's document, parsed as the analysis thread parses pages (capped nesting, no quadratic stray end tags):
 * a login runs on the worker's main thread. A page too deep to parse: why, as the rest of the sentence.
 */
function parsed(html: string): cheerio.CheerioAPI | string {
  try {
    return HtmlPage.parse(html).$;
  } catch (err) {
    if (err instanceof TooDeepError) return `could not be read: ${err.message}`;
    throw err;
  }
}
