// `${CRAWL_STUDIO_*}` in `login` and `proxy`: where credentials come from. Pure (the environment is passed in).
//
// Only the variables variables.ts allows at each place expand (a shared task file must not be able to send
// `${AWS_SECRET_ACCESS_KEY}`, or Crawl Studio's own Redis password, to a host it names). The parse keeps the templates and the worker
// expands them at the moment it logs in or connects, so a parsed task (sent to the analysis thread, quoted in
// messages) never holds a secret. Messages name variables, never their values.

import { expandStoreUrl, VARIABLE } from './storeUrl';
import { isLoopbackHost, mayUse, variableKind, variableProblem, type VariablePlace } from './variables';
import type { CrawlTask, RequestTemplate } from './model';

export function variablesOf(template: string): string[] {
  return [...template.matchAll(VARIABLE)].map((m) => m[1]!);
}

/** Problems with the variable names of a template at `place` (see variables.ts): one per name it may not use. */
export function templateProblems(template: string, place: VariablePlace): string[] {
  return [...new Set(variablesOf(template))].flatMap((n) => variableProblem(n, place) ?? []);
}

export interface Expanded<T> {
  /** Holds secrets: never put it in a message. */
  readonly value: T;
  /** Variables that are not set (names only). */
  readonly missing: readonly string[];
}

/** A login value with its variables replaced as they are (it is sent in a form or JSON body, not a URL). */
export function expandValue(template: string, env: Readonly<Record<string, string | undefined>>): Expanded<string> {
  const missing: string[] = [];
  const value = template.replace(VARIABLE, (_w, name: string) => {
    const v = mayUse(name, 'request') ? env[name] : undefined;
    if (v === undefined) missing.push(name);
    return v ?? '';
  });
  return { value, missing };
}

/** A JSON body whose strings are templates. */
export function expandJson(value: unknown, env: Readonly<Record<string, string | undefined>>): Expanded<unknown> {
  const missing: string[] = [];
  const walk = (v: unknown): unknown => {
    if (typeof v === 'string') {
      const e = expandValue(v, env);
      missing.push(...e.missing);
      return e.value;
    }
    if (Array.isArray(v)) return v.map(walk);
    if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x)]));
    return v;
  };
  return { value: walk(value), missing };
}

/** Whether a proxy URL template writes credentials literally (`user:pw@` with no variable in them). */
export function hasLiteralCredentials(template: string): boolean {
  const m = /^[a-z][a-z0-9+.-]*:\/\/([^/?#]*)@/i.exec(template);
  if (!m) return false;
  const colon = m[1]!.indexOf(':');
  const password = colon < 0 ? '' : m[1]!.slice(colon + 1);
  return password !== '' && !/^\$\{[A-Za-z0-9_]+\}$/.test(password);
}

/** A proxy URL with its variables expanded, each encoded for the part of the URL it lands in. */
export function expandProxyUrl(
  template: string,
  env: Readonly<Record<string, string | undefined>>,
): { url: string; problems: readonly string[] } {
  const denied = templateProblems(template, 'proxy');
  if (denied.length) return { url: '', problems: denied };
  const { url, problems } = expandStoreUrl(template, env, 'proxy');
  const out = problems.map((p) => p.message);
  if (out.length === 0) {
    const u = new URL(url);
    if (!['http:', 'https:', 'socks5:', 'socks5h:'].includes(u.protocol))
      out.push(`a proxy URL must be http://, https:// or socks5://, not ${u.protocol}//`);
  }
  return { url, problems: out };
}

/**
 * The CRAWL_STUDIO_* variables a task's login, proxies, headers, request bodies and form actions use: what the editor looks up in
 * its Secret Storage.
 */
export function credentialVariables(
  task: Pick<CrawlTask, 'login' | 'proxy'> & Partial<Pick<CrawlTask, 'request' | 'rules' | 'start'>>,
): string[] {
  const out = new Set<string>();
  const walk = (v: unknown): void => {
    if (typeof v === 'string') {
      for (const n of variablesOf(v)) if (variableKind(n) === 'secret' || variableKind(n) === 'proxy') out.add(n);
    } else if (v && typeof v === 'object') {
      Object.values(v).forEach(walk);
    }
  };
  if (task.login) walk([Object.values(task.login.fields), task.login.json]);
  if (task.proxy) walk(task.proxy.urls);
  const bodies = (r: RequestTemplate | null) =>
    r?.body ? (r.body.kind === 'form' ? r.body.fields : r.body.json) : null;
  walk(task.request?.headers);
  for (const rule of task.rules ?? [])
    walk([rule.headers, rule.follow.map((f) => (f.kind === 'links' ? null : bodies(f.request)))]);
  // What `browser.actions` type into forms (`fill`, `select`).
  for (const rule of task.rules ?? [])
    walk(rule.browser?.actions.map((a) => (a.kind === 'fill' || a.kind === 'select' ? a.value : null)));
  for (const s of task.start ?? []) walk(bodies(s.request));
  return [...out].sort();
}

/** A login variable used outside the login, with the field that uses it. */
export interface LoginLeak {
  readonly path: (string | number)[];
  readonly message: string;
}

/**
 * Login credentials go only to the login: a variable that `login` uses (`${CRAWL_STUDIO_PASSWORD}`) may not also
 * stand in a header, a request body or a proxy URL, which go to every host the crawl reaches (or to the proxy).
 */
export function loginLeaks(task: Pick<CrawlTask, 'login' | 'proxy' | 'request' | 'rules' | 'start'>): LoginLeak[] {
  if (!task.login) return [];
  const ofLogin = new Set(credentialVariables({ login: task.login, proxy: null }));
  if (ofLogin.size === 0) return [];
  const out: LoginLeak[] = [];
  const check = (path: (string | number)[], value: unknown) => {
    const names = new Set(variablesOf(JSON.stringify(value ?? null)));
    for (const n of [...names].filter((x) => ofLogin.has(x))) {
      out.push({
        path,
        message: `\${${n}} is a login credential (the login uses it): it goes only to the login, not in ${path.includes('headers') ? 'a header' : path[0] === 'proxy' ? 'a proxy URL' : 'a request body'}, which would send it to other hosts`,
      });
    }
  };
  const bodyOf = (r: RequestTemplate | null) =>
    r?.body ? (r.body.kind === 'form' ? r.body.fields : r.body.json) : null;
  for (const [k, v] of Object.entries(task.request.headers)) check(['request', 'headers', k], v);
  task.rules.forEach((rule, ri) => {
    for (const [k, v] of Object.entries(rule.headers)) check(['rules', ri, 'request', 'headers', k], v);
    rule.follow.forEach((f, fi) => f.kind !== 'links' && check(['rules', ri, 'follow', fi], bodyOf(f.request)));
  });
  task.start.forEach((s, i) => check(['start', i], bodyOf(s.request)));
  task.proxy?.urls.forEach((u, i) => check(['proxy', 'urls', i], u));
  return out;
}

/**
 * Whether a proxy URL would hand credentials from the environment to a proxy host only the task file names. A
 * proxy's password goes only to a proxy the user chose: the whole URL as one variable (`${CRAWL_STUDIO_PROXY}`), a
 * host that is one variable (`@${CRAWL_STUDIO_PROXY_HOST}:3128`), or a loopback host. Names only in the message.
 */
export function proxySecretProblems(template: string): string[] {
  const m = /^[a-z][a-z0-9+.-]*:\/\/([^/?#]*)@([^/?#]*)/i.exec(template.trim());
  if (!m) return [];
  const secrets = [...new Set(variablesOf(m[1]!))];
  if (secrets.length === 0) return [];
  const host = /^\[[^\]]*\]/.exec(m[2]!)?.[0] ?? m[2]!.replace(/:[^:]*$/, '');
  if (/^\$\{[A-Za-z_][A-Za-z0-9_]*\}$/.test(host) || isLoopbackHost(host)) return [];
  const named = host.length > 80 ? host.slice(0, 79) + '…' : host;
  return [
    `${secrets.map((n) => `\${${n}}`).join(', ')} would be sent to ${named}, a proxy host this file names: a proxy's credentials go only to a proxy you chose: give the whole URL as \${CRAWL_STUDIO_PROXY} or the host as \${CRAWL_STUDIO_PROXY_HOST} (set in your environment), or use a loopback proxy`,
  ];
}
