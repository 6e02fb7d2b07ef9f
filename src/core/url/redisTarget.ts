import { redactUrl } from './redact';

// Which Redis a crawl talks to, as one string: the same text travels through `--redis`, $CRAWL_STUDIO_REDIS, the
// `crawlStudio.redisUrl` setting and a spawned worker's environment, so a Sentinel or Cluster deployment needs no
// plumbing of its own in any front end. Parsed here, once; src/redis/connect.ts turns the result into a client.
//
//   redis://[user:pass@]host:6379[/db]          one node (and rediss:// for TLS): handed to ioredis unchanged
//   redis+sentinel://[user:pass@]host:26379,host2:26379/<master>[?db=N&sentinelUsername=…&sentinelPassword=…]
//   redis+cluster://[user:pass@]host:7000,host:7001,…
//
// (and rediss+sentinel://, rediss+cluster:// for TLS). The userinfo is the data nodes' ACL user and password; the
// sentinels' own, when they have one, go in the query. A password with '@', ':', '/', '?', '#', '&' or ',' is
// percent-encoded, as in any URL. Messages quote the URL redacted, never a password.

export interface RedisHostPort {
  readonly host: string;
  readonly port: number;
}

interface Credentials {
  /** ACL user of the data nodes; absent: the default user. */
  readonly username?: string;
  readonly password?: string;
}

export type RedisTarget =
  | { readonly kind: 'node'; readonly url: string }
  | (Credentials & {
      readonly kind: 'sentinel';
      readonly tls: boolean;
      readonly sentinels: readonly RedisHostPort[];
      readonly masterName: string;
      readonly db: number;
      readonly sentinelUsername?: string;
      readonly sentinelPassword?: string;
    })
  | (Credentials & { readonly kind: 'cluster'; readonly tls: boolean; readonly nodes: readonly RedisHostPort[] });

const DEFAULT_SENTINEL_PORT = 26379;
const DEFAULT_REDIS_PORT = 6379;

const FORMS =
  'redis://host:6379, redis+sentinel://host:26379,host2:26379/<master name>, or redis+cluster://host:7000,host2:7001';

const SCHEMES: Record<string, { kind: 'sentinel' | 'cluster'; tls: boolean }> = {
  'redis+sentinel': { kind: 'sentinel', tls: false },
  'rediss+sentinel': { kind: 'sentinel', tls: true },
  'redis+cluster': { kind: 'cluster', tls: false },
  'rediss+cluster': { kind: 'cluster', tls: true },
};

const SENTINEL_PARAMS = ['db', 'sentinelUsername', 'sentinelPassword'] as const;

/** A Redis target that cannot be used; its message quotes the target redacted. */
export class RedisTargetError extends Error {
  constructor(target: string, problem: string) {
    super(target ? `Redis target ${redactUrl(target)}: ${problem}` : problem);
    this.name = 'RedisTargetError';
  }
}

/** Reads a Redis target (see the forms above); throws RedisTargetError naming what is wrong. */
export function parseRedisTarget(text: string): RedisTarget {
  const target = text.trim();
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(target);
  if (!scheme) {
    // ioredis also takes a Unix socket's path.
    if (target.startsWith('/')) return { kind: 'node', url: target };
    throw new RedisTargetError(target, `not a Redis URL: use ${FORMS}`);
  }
  const name = scheme[1]!.toLowerCase();
  if (name === 'redis' || name === 'rediss') {
    // Handed to ioredis unchanged, which decodes the user name and password and said only "URI malformed" for a
    // bad '%': checked here, naming the part.
    const authority = target.slice(scheme[0].length).split(/[/?#]/, 1)[0]!;
    const at = authority.lastIndexOf('@');
    if (at >= 0) readUserinfo(target, authority.slice(0, at));
    return { kind: 'node', url: target };
  }
  const form = SCHEMES[name];
  if (!form) throw new RedisTargetError(target, `unknown scheme '${scheme[1]}': use ${FORMS}`);

  const rest = target.slice(scheme[0].length);
  const authorityEnd = rest.search(/[/?#]/);
  const authority = authorityEnd < 0 ? rest : rest.slice(0, authorityEnd);
  const tail = authorityEnd < 0 ? '' : rest.slice(authorityEnd);
  const at = authority.lastIndexOf('@');
  const credentials = at < 0 ? {} : readUserinfo(target, authority.slice(0, at));
  const hosts = readHosts(
    target,
    authority.slice(at + 1),
    form.kind === 'sentinel' ? DEFAULT_SENTINEL_PORT : DEFAULT_REDIS_PORT,
  );

  if (tail.includes('#'))
    throw new RedisTargetError(target, "a Redis target has no '#' part (percent-encode '#' in a password as %23)");
  const q = tail.indexOf('?');
  const path = q < 0 ? tail : tail.slice(0, q);
  const query = new URLSearchParams(q < 0 ? '' : tail.slice(q + 1));

  if (form.kind === 'cluster') {
    if (path !== '' && path !== '/' && path !== '/0')
      throw new RedisTargetError(target, `a Redis Cluster has only database 0, so no path ('${path}')`);
    const unknown = [...new Set(query.keys())];
    if (unknown.length > 0)
      throw new RedisTargetError(
        target,
        `unknown parameter${unknown.length > 1 ? 's' : ''} ${unknown.map((k) => `'${k}'`).join(', ')}: redis+cluster:// takes none`,
      );
    return { kind: 'cluster', tls: form.tls, nodes: hosts, ...credentials };
  }

  const rawName = path.replace(/^\//, '');
  if (rawName.includes('/'))
    throw new RedisTargetError(target, 'the path is the master name alone; for a database write ?db=N');
  const masterName = decode(target, rawName, 'the master name');
  if (masterName === '')
    throw new RedisTargetError(
      target,
      'no master name: write it as the path, e.g. redis+sentinel://host:26379/mymaster',
    );
  const unknown = [...new Set(query.keys())].filter((k) => !(SENTINEL_PARAMS as readonly string[]).includes(k));
  if (unknown.length > 0)
    throw new RedisTargetError(
      target,
      `unknown parameter${unknown.length > 1 ? 's' : ''} ${unknown.map((k) => `'${k}'`).join(', ')}: redis+sentinel:// takes ${SENTINEL_PARAMS.join(', ')}`,
    );
  for (const k of SENTINEL_PARAMS)
    if (query.getAll(k).length > 1) throw new RedisTargetError(target, `'${k}' is given more than once`);
  const dbText = query.get('db');
  const db = dbText === null ? 0 : Number(dbText);
  if (!Number.isInteger(db) || db < 0 || dbText === '')
    throw new RedisTargetError(target, `db must be a whole number of at least 0, not '${dbText}'`);
  const sentinelUsername = query.get('sentinelUsername') || undefined;
  const sentinelPassword = query.get('sentinelPassword') || undefined;
  return {
    kind: 'sentinel',
    tls: form.tls,
    sentinels: hosts,
    masterName,
    db,
    ...credentials,
    ...(sentinelUsername ? { sentinelUsername } : {}),
    ...(sentinelPassword ? { sentinelPassword } : {}),
  };
}

/** The target as its one string (the inverse of parseRedisTarget): for targets built from CLI flags. */
export function formatRedisTarget(t: RedisTarget): string {
  if (t.kind === 'node') return t.url;
  const user = t.username ? encodeURIComponent(t.username) : '';
  const userinfo = t.password ? `${user}:${encodeURIComponent(t.password)}@` : user ? `${user}@` : '';
  const hosts = (t.kind === 'sentinel' ? t.sentinels : t.nodes)
    .map((h) => `${h.host.includes(':') ? `[${h.host}]` : h.host}:${h.port}`)
    .join(',');
  const scheme = `${t.tls ? 'rediss' : 'redis'}+${t.kind}`;
  if (t.kind === 'cluster') return `${scheme}://${userinfo}${hosts}`;
  const query = new URLSearchParams();
  if (t.db !== 0) query.set('db', String(t.db));
  if (t.sentinelUsername) query.set('sentinelUsername', t.sentinelUsername);
  if (t.sentinelPassword) query.set('sentinelPassword', t.sentinelPassword);
  const q = query.toString();
  return `${scheme}://${userinfo}${hosts}/${encodeURIComponent(t.masterName)}${q ? `?${q}` : ''}`;
}

/** What the CLI's --sentinel/--sentinel-master/--cluster flags say, and the passwords from the environment. */
export interface RedisTargetFlags {
  readonly sentinel?: string;
  readonly sentinelMaster?: string;
  readonly cluster?: string;
  /** The data nodes' password ($CRAWL_STUDIO_REDIS_PASSWORD): never a flag, a command line is public. */
  readonly password?: string;
  /** The sentinels' own password ($CRAWL_STUDIO_SENTINEL_PASSWORD). */
  readonly sentinelPassword?: string;
}

/** The target the flags name, as its one string; null when they name none. Throws on a flag missing its partner. */
export function targetFromFlags(f: RedisTargetFlags): string | null {
  if (f.sentinel !== undefined && f.cluster !== undefined)
    throw new RedisTargetError('', '--sentinel and --cluster name two different deployments: give one');
  if (f.sentinelMaster !== undefined && f.sentinel === undefined)
    throw new RedisTargetError('', '--sentinel-master needs --sentinel host:port,host:port');
  const password = f.password || undefined;
  if (f.sentinel !== undefined) {
    if (!f.sentinelMaster)
      throw new RedisTargetError(
        '',
        '--sentinel needs --sentinel-master <name>, the master name the sentinels monitor',
      );
    const sentinels = readHosts(`--sentinel ${f.sentinel}`, f.sentinel, DEFAULT_SENTINEL_PORT);
    const sentinelPassword = f.sentinelPassword || undefined;
    return formatRedisTarget({
      kind: 'sentinel',
      tls: false,
      sentinels,
      masterName: f.sentinelMaster,
      db: 0,
      ...(password ? { password } : {}),
      ...(sentinelPassword ? { sentinelPassword } : {}),
    });
  }
  if (f.cluster !== undefined)
    return formatRedisTarget({
      kind: 'cluster',
      tls: false,
      nodes: readHosts(`--cluster ${f.cluster}`, f.cluster, DEFAULT_REDIS_PORT),
      ...(password ? { password } : {}),
    });
  return null;
}

/** The passwords of a target, kept apart from it (the editor keeps them in Secret Storage, the text in settings). */
export interface RedisPasswords {
  /** The data nodes' password. */
  readonly password?: string;
  /** The sentinels' own password (redis+sentinel:// only). */
  readonly sentinelPassword?: string;
}

/** Splits a target into its text without passwords and the passwords it held. Throws RedisTargetError. */
export function splitPasswords(text: string): { readonly target: string; readonly passwords: RedisPasswords } {
  const t = parseRedisTarget(text);
  if (t.kind === 'node') {
    if (!/^rediss?:\/\//i.test(t.url)) return { target: t.url, passwords: {} };
    const u = nodeUrl(t.url);
    const password = u.password ? decodeURIComponent(u.password) : undefined;
    u.password = '';
    return { target: u.toString(), passwords: password ? { password } : {} };
  }
  if (t.kind === 'cluster') {
    const { password, ...rest } = t;
    return { target: formatRedisTarget(rest), passwords: password ? { password } : {} };
  }
  const { password, sentinelPassword, ...rest } = t;
  return {
    target: formatRedisTarget(rest),
    passwords: { ...(password ? { password } : {}), ...(sentinelPassword ? { sentinelPassword } : {}) },
  };
}

/** Puts passwords kept apart back into a target, where it has none of its own. Throws RedisTargetError. */
export function joinPasswords(text: string, p: RedisPasswords): string {
  const t = parseRedisTarget(text);
  if (t.kind === 'node') {
    if (!p.password || !/^rediss?:\/\//i.test(t.url)) return t.url;
    const u = nodeUrl(t.url);
    if (u.password) return t.url;
    u.password = encodeURIComponent(p.password);
    return u.toString();
  }
  const password = t.password ?? p.password;
  if (t.kind === 'cluster') return formatRedisTarget({ ...t, ...(password ? { password } : {}) });
  const sentinelPassword = t.sentinelPassword ?? p.sentinelPassword;
  return formatRedisTarget({
    ...t,
    ...(password ? { password } : {}),
    ...(sentinelPassword ? { sentinelPassword } : {}),
  });
}

function nodeUrl(url: string): URL {
  try {
    return new URL(url);
  } catch {
    throw new RedisTargetError(url, "not a valid URL (percent-encode '@', ':', '/', '?' and '#' in a password)");
  }
}

/** Reads `host:port,host:port` (a host alone takes the default port; IPv6 in brackets). */
function readHosts(target: string, list: string, defaultPort: number): RedisHostPort[] {
  if (list.trim() === '') throw new RedisTargetError(target, 'no host: give at least one host:port');
  return list.split(',').map((entry, i) => {
    const m = /^(?:\[([0-9A-Fa-f:.]+)\]|([A-Za-z0-9._-]+))(?::(\d{1,5}))?$/.exec(entry.trim());
    const port = m?.[3] === undefined ? defaultPort : Number(m[3]);
    // The entry itself is not quoted: with an unencoded '/' or '@' in a password it could hold part of it.
    if (!m || port < 1 || port > 65535)
      throw new RedisTargetError(
        target,
        `host ${i + 1} of the list is not host:port (hosts are separated by ',', a password's '@', ':', '/' and ',' are percent-encoded)`,
      );
    return { host: m[1] ?? m[2]!, port };
  });
}

function readUserinfo(target: string, userinfo: string): Credentials {
  const colon = userinfo.indexOf(':');
  const username = decode(target, colon < 0 ? userinfo : userinfo.slice(0, colon), 'the user name');
  const password = colon < 0 ? '' : decode(target, userinfo.slice(colon + 1), 'the password');
  return { ...(username ? { username } : {}), ...(password ? { password } : {}) };
}

function decode(target: string, text: string, what: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    throw new RedisTargetError(target, `${what} holds a '%' that is not a percent-encoding (write '%' as %25)`);
  }
}

/** Whether a target holds a password (of the data nodes or the sentinels). Throws RedisTargetError. */
export function targetHasPassword(text: string): boolean {
  const t = parseRedisTarget(text);
  if (t.kind === 'node') return splitPasswords(text).passwords.password !== undefined;
  return t.password !== undefined || (t.kind === 'sentinel' && t.sentinelPassword !== undefined);
}

/** The database a target names: a node's /N (or ?db=N, which ioredis also reads), a Sentinel target's ?db=N; 0 else. */
export function targetDatabase(target: RedisTarget): number {
  switch (target.kind) {
    case 'node': {
      const u = new URL(target.url);
      return Number(u.pathname.slice(1) || u.searchParams.get('db') || 0) || 0;
    }
    case 'sentinel':
      return target.db;
    case 'cluster':
      return 0;
  }
}
