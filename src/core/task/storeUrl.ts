import { redactUrl } from '../url/redact';
import { isLoopbackHost, variableProblem } from './variables';

// `store.url` of a task file: `${VAR}` expansion and the checks that keep a task file from reaching what it
// should not. Pure (the environment is passed in), so the rules are tested without touching process.env.
//
// - Only some variables expand: those named CRAWL_STUDIO_* and the standard libpq ones (PGHOST, PGPASSWORD, …).
//   A task file is shared and run by others; `${AWS_SECRET_ACCESS_KEY}` in it would send that secret to whatever
//   host the file names. A variable outside the list is an error, never expanded.
// - A value is encoded for the part of the URL it lands in, so a password such as `p@ss:w/rd` stays a password
//   instead of changing where the URL points (userinfo, path, query and fragment: percent-encoded; host and
//   port: refused when they hold characters a host or port cannot have).
// - Messages quote the template (`${PGPASSWORD}`), never an expanded value.
// - A relative SQLite path stays inside the task file's folder; an absolute path is taken as meant.

export interface StoreUrlProblem {
  readonly message: string;
}

export interface ExpandedStoreUrl {
  /** The URL with its variables expanded; holds secrets: never put it in a message. */
  readonly url: string;
  readonly problems: readonly StoreUrlProblem[];
}

/** `${NAME}` in a task-file value (global: use with replace / matchAll). */
export const VARIABLE = /\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g;
const URL_FORM = /^([a-z][a-z0-9+.-]*):\/\//i;
/** What a host (name, IPv4, [IPv6]) and port may hold. */
const HOST_CHARS = /^[A-Za-z0-9.\-_~%[\]:]*$/;

type UrlPart = 'scheme' | 'userinfo' | 'host' | 'path';

/** Which part of a scheme://authority/path?query#fragment template each offset falls in (null: not a URL). */
function partsOf(template: string): ((offset: number) => UrlPart) | null {
  const m = URL_FORM.exec(template);
  if (!m || /^sqlite$/i.test(m[1]!)) return null;
  const authorityStart = m[0].length;
  let authorityEnd = template.slice(authorityStart).search(/[/?#]/);
  authorityEnd = authorityEnd < 0 ? template.length : authorityStart + authorityEnd;
  const at = template.lastIndexOf('@', authorityEnd - 1);
  const userinfoEnd = at >= authorityStart ? at : authorityStart;
  return (offset) => {
    if (offset < authorityStart) return 'scheme';
    if (offset < userinfoEnd) return 'userinfo';
    if (offset < authorityEnd) return 'host';
    return 'path';
  };
}

/** Expands `${VAR}` in a store URL template (or a proxy URL's: `place`). `env` is normally process.env. */
export function expandStoreUrl(
  template: string,
  env: Readonly<Record<string, string | undefined>>,
  place: 'store' | 'proxy' = 'store',
): ExpandedStoreUrl {
  const problems: StoreUrlProblem[] = [];
  const reported = new Set<string>();
  const report = (key: string, message: string) => {
    if (reported.has(key)) return;
    reported.add(key);
    problems.push({ message });
  };
  const partAt = partsOf(template);
  const url = template.replace(VARIABLE, (whole: string, name: string, offset: number) => {
    const shown = name.length > 80 ? name.slice(0, 79) + '…' : name;
    const denied = variableProblem(name, place);
    if (denied !== null) {
      report(`deny:${name}`, denied);
      return '';
    }
    const v = env[name];
    if (v === undefined) {
      report(`unset:${name}`, `environment variable ${shown} is not set`);
      return '';
    }
    if (!partAt) return v;
    switch (partAt(offset)) {
      case 'scheme':
        report(
          `scheme:${name}`,
          `\${${shown}} cannot stand in the URL's scheme: write postgres:// (or the scheme you mean) in the file`,
        );
        return '';
      case 'host':
        if (!HOST_CHARS.test(v)) {
          report(
            `host:${name}`,
            `\${${shown}} is in the host part of the URL but holds characters a host name or port cannot have (such as / @ ? #)`,
          );
          return '';
        }
        return v;
      case 'userinfo':
      case 'path':
        return encodeURIComponent(v);
    }
    return whole;
  });
  if (partAt && problems.length === 0) {
    try {
      new URL(url);
    } catch {
      problems.push({
        message: `'${template.length > 120 ? template.slice(0, 119) + '…' : template}' is not a valid URL once its variables are expanded: write postgres://user:password@host:5432/database`,
      });
    }
  }
  return { url, problems };
}

const SQLITE_EXT = /\.(sqlite3?|db)$/i;

/**
 * What a store URL names, before anything is opened. The one parser of store URLs: the task file's checks, the
 * store's opener (store/open.ts resolves the path and picks the default schema) and the run's file checks read it.
 *   sqlite:<path>, sqlite://<path>, or a path ending in .sqlite/.sqlite3/.db  -> SQLite file (path as written)
 *   postgres://user:password@host:port/db[?schema=name], postgresql://...    -> PostgreSQL (`schema` taken out)
 */
export type StoreUrlTarget =
  | { readonly kind: 'sqlite'; readonly path: string }
  | { readonly kind: 'postgres'; readonly url: string; readonly schema: string | null };

/** Parses a store URL; throws a message that says which forms are accepted, never a password. */
export function parseStoreUrl(url: string): StoreUrlTarget {
  const text = url.trim();
  const path = sqliteText(text);
  if (path !== null) {
    if (!path)
      throw new Error(`store URL "${text}" names no file: write sqlite:<path>, e.g. sqlite:.crawl/items.sqlite`);
    return { kind: 'sqlite', path };
  }
  if (/^postgres(ql)?:\/\//i.test(text)) {
    let parsed: URL;
    try {
      parsed = new URL(text);
    } catch {
      throw new Error(
        `store URL "${redactUrl(text)}" is not a valid URL: write postgres://user:password@host:5432/database`,
      );
    }
    const schema = parsed.searchParams.get('schema') || null;
    parsed.searchParams.delete('schema');
    if (schema !== null && schema.length > 63)
      throw new Error(
        `PostgreSQL schema "${schema}" is longer than 63 characters: set ?schema=<name> in the store URL`,
      );
    return { kind: 'postgres', url: parsed.toString(), schema };
  }
  throw new Error(
    `unsupported store URL "${redactUrl(text)}": use sqlite:<path> (or a path ending in .sqlite) for a local file, ` +
      'or postgres://user:password@host:5432/database for PostgreSQL',
  );
}

/** The SQLite file a store URL names, as written (relative or absolute), or null for another kind of store. */
export function sqlitePathOf(url: string): string | null {
  return sqliteText(url.trim());
}

function sqliteText(text: string): string | null {
  if (/^sqlite:/i.test(text)) {
    const path = text.slice('sqlite:'.length);
    return path.startsWith('//') ? path.slice(2) : path;
  }
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(text) && SQLITE_EXT.test(text)) return text;
  return null;
}

export function isAbsolutePath(path: string): boolean {
  return path.startsWith('/') || path.startsWith('\\') || /^[A-Za-z]:[\\/]/.test(path);
}

/** Whether a relative path, resolved lexically against a folder, leaves that folder (through `..`). */
export function escapesFolder(path: string): boolean {
  let depth = 0;
  for (const seg of path.split(/[\\/]+/)) {
    if (seg === '' || seg === '.') continue;
    if (seg === '..') {
      if (--depth < 0) return true;
    } else depth++;
  }
  return false;
}

const WHOLE_VARIABLE = /^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$/;

/**
 * Whether a PostgreSQL store URL would hand a password from the environment to a host the task file names.
 * A store password goes only to a store host the user chose: a loopback host, a host that is itself one variable
 * (`${PGHOST}`, `${CRAWL_STUDIO_DB_HOST}`), or the host $PGHOST names. To any other host, a password written as a
 * variable (in the password, or in a query parameter such as `?password=`) is refused, and so is a URL with no
 * password while $PGPASSWORD is set (the PostgreSQL driver would send $PGPASSWORD by itself). Messages name
 * variables and the host, never a value.
 */
export function storeSecretProblems(template: string, env: Readonly<Record<string, string | undefined>>): string[] {
  const m = /^(postgres(?:ql)?):\/\/([^/?#]*)([^?#]*)(\?[^#]*)?/i.exec(template.trim());
  if (!m) return [];
  const authority = m[2]!;
  const at = authority.lastIndexOf('@');
  const userinfo = at < 0 ? '' : authority.slice(0, at);
  const hostPort = authority.slice(at + 1);
  const host = /^\[[^\]]*\]/.exec(hostPort)?.[0] ?? hostPort.replace(/:[^:]*$/, '');
  if (host === '' || WHOLE_VARIABLE.test(host) || isLoopbackHost(host)) return [];
  if (env.PGHOST !== undefined && env.PGHOST.toLowerCase() === host.toLowerCase()) return [];
  const named = host.includes('${')
    ? `a host this file builds (${host.length > 80 ? host.slice(0, 79) + '…' : host})`
    : `${host}, a host this file names`;
  const fix = `a store password goes only to a store host you choose: write the host as \${PGHOST} (set in your environment), use a loopback host, or set PGHOST=${host.includes('${') ? '<the host>' : host} to confirm this one`;
  const colon = userinfo.indexOf(':');
  const password = colon < 0 ? '' : userinfo.slice(colon + 1);
  // In the query, the parameters that carry a secret (libpq's `password`, `sslpassword`; a token or key).
  const query = new URLSearchParams((m[4] ?? '').slice(1));
  const secretParams = [...query]
    .filter(([k]) => /pass|secret|token|key/i.test(k))
    .map(([, v]) => v)
    .join(' ');
  const secrets = [...`${password} ${secretParams}`.matchAll(VARIABLE)].map((v) => `\${${v[1]}}`);
  if (secrets.length > 0) return [`${[...new Set(secrets)].join(', ')} would be sent to ${named}; ${fix}`];
  if (colon < 0 && env.PGPASSWORD !== undefined) {
    return [`no password is written for ${named}, so the PostgreSQL driver would send it $PGPASSWORD; ${fix}`];
  }
  return [];
}
