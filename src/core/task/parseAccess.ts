import { DEFAULTS, type LoginSpec, type ProxySpec, type SessionSpec } from './model';
import { checkHeaders, requestVariables } from './requests';
import { expandProxyUrl, hasLiteralCredentials, proxySecretProblems, templateProblems, variablesOf } from './secrets';
import { checkStartUrl, type Checker } from './checker';
import type { Path } from './diagnosticSink';
import type { RawTask } from './rawTask';

// How a task reaches its pages: `session` (cookie sessions), `login`, `proxy`, and headers with `${CRAWL_STUDIO_*}`
// variables. A variable not set in the environment the caller passed is a warning: the editor's environment is
// not the workers' (Secret Storage fills theirs), and the worker reports them by name when it logs in or connects.

/** The warning for a `${CRAWL_STUDIO_*}` that is not set in the environment the parse was given. */
function unsetVariable(name: string): string {
  return `environment variable ${name} is not set here; the workers need it (in the editor: Crawl Studio: Set Crawl Secret)`;
}

/**
 * Headers checked (checkHeaders), with a warning at each header whose `${CRAWL_STUDIO_*}` is not set here, as for
 * `login` and `proxy`.
 */
export function headersOf(headers: Record<string, string> | undefined, path: Path, c: Checker): Record<string, string> {
  const checked = checkHeaders(headers, path, c.report);
  for (const [k, v] of Object.entries(checked)) {
    for (const name of requestVariables([v]))
      if (c.env[name] === undefined) c.report([...path, k], unsetVariable(name), 'warning');
  }
  return checked;
}

/** A template's variables checked for where they stand, and a warning for each `${CRAWL_STUDIO_*}` not set. */
function checkVariables(c: Checker, path: Path, template: string, place: 'login' | 'proxy' = 'login'): void {
  for (const p of templateProblems(template, place)) c.diags.atPath(path, p);
  for (const name of variablesOf(template)) {
    if (name.startsWith('CRAWL_STUDIO_') && c.env[name] === undefined)
      c.diags.atPath(path, unsetVariable(name), 'warning');
  }
}

/**
 * `session`, `login` and `proxy`. A login needs sessions (its cookies are a session's), so `login` alone gives a pool
 * of one.
 */
export function buildAccess(
  raw: RawTask,
  c: Checker,
): { session: SessionSpec | null; login: LoginSpec | null; proxy: ProxySpec | null } {
  const login = raw.login ? buildLogin(raw.login, c) : null;
  let session: SessionSpec | null = null;
  const s = raw.session;
  if (s || login) {
    if (s?.retireOn?.selector !== undefined) c.selector(['session', 'retireOn', 'selector'], s.retireOn.selector);
    session = {
      pool: s?.pool ?? (login ? 1 : 4),
      maxPages: s?.maxPages ?? null,
      retireOnStatus: s?.retireOn?.status ?? DEFAULTS.retireOnStatus,
      retireOnSelector: s?.retireOn?.selector ?? null,
    };
  }
  return { session, login, proxy: raw.proxy ? buildProxy(raw.proxy, c) : null };
}

function buildLogin(l: NonNullable<RawTask['login']>, c: Checker): LoginSpec {
  const { diags, selector } = c;
  checkStartUrl(['login', 'url'], l.url, diags);
  if ((l.form === undefined) === (l.post === undefined)) {
    diags.atPath(['login'], `give either 'form' (fill in the form at url) or 'post' (send fields or json to url)`);
  }
  if (l.post && (l.post.fields === undefined) === (l.post.json === undefined)) {
    diags.atPath(['login', 'post'], `give either 'fields' (form-encoded) or 'json'`);
  }
  const fields = l.form?.fields ?? l.post?.fields ?? {};
  const fieldsPath: Path = l.form ? ['login', 'form', 'fields'] : ['login', 'post', 'fields'];
  for (const [k, v] of Object.entries(fields)) checkVariables(c, [...fieldsPath, k], v);
  const strings = (v: unknown, path: Path): void => {
    if (typeof v === 'string') checkVariables(c, path, v);
    else if (v && typeof v === 'object') for (const [k, x] of Object.entries(v)) strings(x, [...path, k]);
  };
  if (l.post?.json) strings(l.post.json, ['login', 'post', 'json']);
  if (l.form?.selector !== undefined) selector(['login', 'form', 'selector'], l.form.selector);
  if (l.check?.selector !== undefined) selector(['login', 'check', 'selector'], l.check.selector);
  const browser = l.browser === true;
  if (browser && !l.form)
    diags.atPath(
      ['login', 'browser'],
      `a browser login fills in a form: give 'form' with 'fields' (CSS selectors of the inputs and their values)`,
    );
  if (browser) for (const k of Object.keys(l.form?.fields ?? {})) selector([...fieldsPath, k], k);
  if (l.form?.submit !== undefined) {
    if (!browser)
      diags.atPath(
        ['login', 'form', 'submit'],
        `'submit' is for a browser login (browser: true); a fetched form is submitted to its action`,
      );
    else selector(['login', 'form', 'submit'], l.form.submit);
  }
  return {
    url: l.url,
    kind: l.form ? 'form' : 'post',
    formSelector: l.form?.selector ?? null,
    fields,
    browser,
    submitSelector: l.form?.submit ?? null,
    json: l.post?.json ?? null,
    checkSelector: l.check?.selector ?? null,
  };
}

function buildProxy(raw: NonNullable<RawTask['proxy']>, c: Checker): ProxySpec {
  raw.urls.forEach((u, i) => {
    const path: Path = ['proxy', 'urls', i];
    if (hasLiteralCredentials(u)) {
      c.diags.atPath(
        path,
        `the proxy's password is written in the file: write it as \${CRAWL_STUDIO_PROXY_PASSWORD} (an environment variable) instead`,
      );
      return;
    }
    checkVariables(c, path, u, 'proxy');
    for (const p of proxySecretProblems(u)) c.diags.atPath(path, p);
    if (templateProblems(u, 'proxy').length === 0 && variablesOf(u).every((n) => c.env[n] !== undefined)) {
      for (const p of expandProxyUrl(u, c.env).problems) c.diags.atPath(path, p);
    }
  });
  return { urls: raw.urls, rotate: raw.rotate ?? 'per-session' };
}
