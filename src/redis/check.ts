import { ReplyError } from 'ioredis';
import type { Redis } from './connect';
import { connectTarget, isCluster, isSelectRefusal, RECONNECT_CAUSE } from './connect';
import { parseRedisTarget, targetDatabase, type RedisTarget } from '../core/url/redisTarget';
import { redactUrl } from '../core/url/redact';
import { isReadOnlyError, READ_ONLY_CAUSE, READ_ONLY_HINT } from './readOnly';
import { evictionRisk, readMemory } from './memory';

export { isReadOnlyError, readOnlyText } from './readOnly';

// Is the Redis target there, and is it what it was named as? Asked once, with no reconnects, before a command
// starts its work (issue 31, item 2): the engine's own connections reconnect forever (connect.ts), which made a
// wrong target hang silently. The answer names the target (never its password), the cause and what to check.

export type RedisFailureCause =
  'refused' | 'name' | 'timeout' | 'auth' | 'permission' | 'tls' | 'topology' | 'replica' | 'database' | 'other';

/** The SHA-1 of no script: the access check's EVALSHA is answered NOSCRIPT when the user may run scripts. */
const NO_SUCH_SCRIPT = '0'.repeat(40);

/** Every key Crawl Studio writes starts so (frontier/keys.ts): what an ACL user's key pattern must allow. */
const KEY_SPACE = 'cs:*';

const CAUSE_TEXT: Record<RedisFailureCause, string> = {
  refused: 'connection refused',
  name: 'name not resolved',
  timeout: 'timed out',
  auth: 'authentication failed',
  permission: 'permission denied',
  tls: 'TLS failed',
  topology: 'not the deployment named',
  replica: READ_ONLY_CAUSE,
  database: 'database not available',
  other: 'error',
};

const HINTS: Record<RedisFailureCause, string> = {
  refused: 'is Redis running there? Check the host and port (--redis, $CRAWL_STUDIO_REDIS) and a firewall',
  name: 'check the host name (a typo? a name only another network resolves?)',
  timeout: 'check the host and port, and that nothing drops the connection (firewall, security group, VPN)',
  auth: 'check the password (and ACL user): in $CRAWL_STUDIO_REDIS, or $CRAWL_STUDIO_REDIS_PASSWORD with --sentinel and --cluster',
  permission: `the ACL user may not run a command or touch a key a crawl needs: scripts (+@scripting) on keys under ${KEY_SPACE} (e.g. ACL SETUSER <user> ~${KEY_SPACE} &* +@all)`,
  tls: 'rediss:// needs a TLS port and redis:// a plain one; check the scheme, the port and the certificate',
  topology:
    'use redis+cluster:// (--cluster) for a Redis Cluster, redis:// for a single node, and the master name the sentinels know',
  replica: READ_ONLY_HINT,
  database:
    'a Redis server has databases 0-15 unless its `databases` setting says more, and an ACL user may be denied SELECT; check the /N at the end of the target (?db=N for Sentinel)',
  other: 'check the target',
};

/** Node's words for a server certificate it does not accept (an unknown CA, a name it does not hold, its dates). */
const CERTIFICATE_REFUSED =
  /self[- ]signed|unable to (verify|get (local )?issuer)|certificate (has expired|is not yet valid)|Hostname\/IP does not match|altnames/i;

/**
 * A managed Redis with its own CA (Memorystore's in-transit encryption, a company's) is refused by Node until the CA
 * is given to it; Node's own variable does it for every process, and the workers inherit it.
 */
const CERTIFICATE_HINT =
  "the server's certificate is not one this machine accepts: for a private CA, give its PEM file as NODE_EXTRA_CA_CERTS=/path/to/ca.pem in the environment of `run`, `worker` and `writer` (their workers inherit it; for the editor, of VS Code); a certificate must also name the host connected to and be in date";

/** Why a Redis target cannot be used; `message` holds the target (redacted), the cause and what to check. */
export class RedisConnectError extends Error {
  constructor(
    readonly target: string,
    readonly cause_: RedisFailureCause,
    readonly detail: string,
  ) {
    const hint = cause_ === 'tls' && CERTIFICATE_REFUSED.test(detail) ? CERTIFICATE_HINT : HINTS[cause_];
    super(`cannot connect to ${target}: ${CAUSE_TEXT[cause_]}${detail ? ` (${detail})` : ''}; ${hint}`);
    this.name = 'RedisConnectError';
  }

  /** "connection refused": the short form for a retry line. */
  get short(): string {
    return CAUSE_TEXT[this.cause_];
  }
}

/** The target as shown: host:port, the sentinels and master, or the cluster's seeds; never a password. */
function describeTarget(text: string): string {
  const t = parseRedisTarget(text);
  switch (t.kind) {
    case 'node':
      return redactUrl(t.url);
    case 'sentinel':
      return `Sentinel ${t.sentinels.map((s) => `${s.host}:${s.port}`).join(',')} (master '${t.masterName}')`;
    case 'cluster':
      return `Redis Cluster seeds ${t.nodes.map((n) => `${n.host}:${n.port}`).join(',')}`;
  }
}

/** What an ioredis error (or a Cluster's last node error) was caused by. */
function classifyRedisError(err: unknown): { cause: RedisFailureCause; detail: string } {
  const e = err as (Error & { code?: string; lastNodeError?: Error }) | undefined;
  const inner = e?.lastNodeError ?? e;
  const code = (inner as { code?: string } | undefined)?.code ?? '';
  const msg = inner instanceof Error ? inner.message : String(inner ?? '');
  // ioredis's Sentinel connector: "All sentinels are unreachable… Last error: <why the last one failed>".
  const last = /All sentinels are unreachable.*? Last error: (.*)$/s.exec(msg);
  if (last) {
    if (/unknown command.*sentinel/i.test(last[1]!))
      return { cause: 'topology', detail: 'a sentinel address answered as a Redis node, not a sentinel' };
    const inner2 = classifyRedisError(new Error(last[1]));
    return inner2.cause === 'other' ? { cause: 'refused', detail: firstWords(last[1]!) } : inner2;
  }
  if (/WRONGPASS|NOAUTH|invalid password|invalid username-password|AUTH.*(without any password|failed)/i.test(msg))
    return { cause: 'auth', detail: firstWords(msg) };
  // Before NOPERM: an ACL user denied SELECT is a database it may not use (and connect.ts closes the connection on it).
  if (isSelectRefusal(inner)) return { cause: 'database', detail: firstWords(msg) };
  if (/^NOPERM/.test(msg)) return { cause: 'permission', detail: firstWords(msg) };
  if (isReadOnlyError(inner)) return { cause: 'replica', detail: '' };
  if (/cluster support disabled/i.test(msg))
    return { cause: 'topology', detail: 'a Redis Cluster client reached a node that is not in cluster mode' };
  if (/No such master|master .*unknown|not (a )?known master/i.test(msg))
    return { cause: 'topology', detail: firstWords(msg) };
  if (code === 'ECONNREFUSED' || /ECONNREFUSED|All sentinels are unreachable/i.test(msg))
    return { cause: 'refused', detail: '' };
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN' || /ENOTFOUND|EAI_AGAIN/.test(msg))
    return { cause: 'name', detail: '' };
  if (code === 'ETIMEDOUT' || /ETIMEDOUT|timed? ?out/i.test(msg)) return { cause: 'timeout', detail: '' };
  if (
    /^ERR_SSL|^ERR_TLS|EPROTO|CERT|SELF_SIGNED|UNABLE_TO_VERIFY/.test(code) ||
    /TLS|SSL|certificate|wrong version number/i.test(msg)
  )
    return { cause: 'tls', detail: firstWords(msg) };
  return { cause: 'other', detail: firstWords(msg) || code };
}

/** An error of reaching Redis (refused, name, timeout, TLS), which a connection's reconnects repeat each attempt. */
export function isUnreachableError(err: unknown): boolean {
  const { cause } = classifyRedisError(err);
  return cause === 'refused' || cause === 'name' || cause === 'timeout' || cause === 'tls';
}

/** Redis refused the ACL user a command or a key (NOPERM): waiting or reconnecting cannot change that. */
export function isPermissionError(err: unknown): err is Error {
  return err instanceof Error && /^NOPERM/.test(err.message);
}

/** A NOPERM as the check says it, without the target: "permission denied (NOPERM …); <the grants a crawl needs>". */
export function permissionText(err: Error): string {
  return `${CAUSE_TEXT.permission} (${firstWords(err.message)}); ${HINTS.permission}`;
}

/** A NOPERM met mid-run, in the words of the check that would have refused it: the target, the cause, the hint. */
export function permissionDenied(text: string, err: Error): string {
  return `${describeTarget(text)} refused a command mid-run: ${permissionText(err)}`;
}

/** An error Redis answered with (a refusal: OOM under maxmemory, READONLY, NOPERM), not one of reaching it. */
export function isReplyError(err: unknown): boolean {
  return err instanceof (ReplyError as typeof Error);
}

function firstWords(msg: string): string {
  const one = msg.replace(/\s+/g, ' ').trim();
  return one.length > 120 ? `${one.slice(0, 119)}…` : one;
}

/**
 * The refusals a connection reconnects for (connect.ts reconnectsFor), as a connection watch says them, or null: each
 * is said once, with what ends it, rather than a lost/connected pair at every reconnect.
 */
function refusalWords(err: unknown): string | null {
  const m = err instanceof Error ? /^(READONLY|NOREPLICAS|MASTERDOWN|LOADING)\b/.exec(err.message)?.[1] : undefined;
  const until = 'trying again until it takes writes';
  switch (m) {
    case 'READONLY':
      return (
        `it is ${CAUSE_TEXT.replica} now (a failover demoted it?); ${until}: a managed Redis's primary endpoint ` +
        `moves to the new primary by itself, a node named directly must be named anew (--redis, $CRAWL_STUDIO_REDIS)`
      );
    case 'NOREPLICAS':
      return `it refuses writes while too few replicas are in reach (NOREPLICAS: its min-replicas-to-write); ${until}`;
    case 'MASTERDOWN':
      return `it lost the link to its master (MASTERDOWN); ${until}`;
    case 'LOADING':
      return `it is loading its data into memory (LOADING); ${until}`;
    default:
      return null;
  }
}

/** How long a reconnected node that was refusing writes must take them before it is said to be back. */
const REFUSAL_SETTLE_MS = 3_000;

/** How long a check waits for an answer before it says "timed out" (within the issue's 10 s, with room to print). */
const CHECK_TIMEOUT_MS = 7_000;

/**
 * What a command will do with Redis: 'read' (status, failures, the monitor's pages) or 'crawl' (run, worker, writer:
 * scripts on the crawl's keys, which an ACL user may be denied while PING and reads pass).
 */
export type RedisAccess = 'read' | 'crawl';

/**
 * Connects to the target once (no reconnect), authenticates, PINGs, and checks that a node named as a single node is
 * not a Cluster node (its keys would be refused with MOVED mid-run); for 'crawl', that the user may run a script on
 * a crawl's keys. Resolves when it can be used, else rejects with a RedisConnectError.
 */
export async function checkRedis(
  text: string,
  timeoutMs = CHECK_TIMEOUT_MS,
  access: RedisAccess = 'read',
): Promise<RedisNotes> {
  const target = parseRedisTarget(text);
  const shown = describeTarget(text);
  let client: Redis | undefined;
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    const s = Math.round(timeoutMs / 1000);
    // A TLS client on a plain port waits for a handshake that never comes: said as what it most likely is.
    const tls = /^rediss(\+|:)/.test(text);
    timer = setTimeout(
      () =>
        reject(
          tls
            ? new RedisConnectError(shown, 'tls', `no TLS handshake in ${s} s: is it a TLS port?`)
            : new RedisConnectError(shown, 'timeout', `no answer in ${s} s`),
        ),
      timeoutMs,
    );
  });
  try {
    return await Promise.race([timeout, probe(target, shown, timeoutMs, access, (c) => (client = c))]);
  } catch (err) {
    if (err instanceof RedisConnectError) throw err;
    const { cause, detail } = classifyRedisError(err);
    throw new RedisConnectError(shown, cause, detail);
  } finally {
    clearTimeout(timer);
    client?.disconnect();
  }
}

async function probe(
  target: RedisTarget,
  shown: string,
  timeoutMs: number,
  access: RedisAccess,
  opened: (c: Redis) => void,
): Promise<RedisNotes> {
  // The first error is the cause: with no reconnect, later ones are only "Connection is closed".
  let first: unknown;
  const client = connectTarget(target, {
    lazyConnect: true,
    retryStrategy: () => null,
    connectTimeout: timeoutMs,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
    connectionName: 'crawl-studio-check',
  });
  opened(client);
  client.on('error', (err: Error) => {
    first ??= err;
  });
  try {
    await client.connect();
    await client.ping();
  } catch (err) {
    throw first && !(err instanceof Error && /WRONGPASS|NOAUTH/.test(err.message)) ? pickCause(first, err) : err;
  }
  // ioredis selects the target's database on connect, and when Redis refuses (an index out of range, an ACL user
  // denied SELECT) it only emits an error and goes on in database 0: a crawl would run, silently, among another's keys.
  if (isSelectRefusal(first)) throw new RedisConnectError(shown, 'database', firstWords(first.message));
  if (target.kind === 'node' && !isCluster(client)) {
    const info = await client.info('cluster').catch(() => '');
    if (/cluster_enabled:1/.test(info))
      throw new RedisConnectError(shown, 'topology', 'it is a Redis Cluster node: name it as redis+cluster://');
  }
  // Without this, a worker whose user lacked +@scripting connected, then logged BullMQ's NOPERM thousands of times
  // a second. A script no server has, on a crawl's key: Redis checks the user's grants (the command, the key) before
  // it looks the script up, so NOSCRIPT means allowed. No Lua is sent (the crawl's scripts live in frontier/).
  if (access === 'crawl') {
    const answer = await client.call('EVALSHA', NO_SUCH_SCRIPT, 1, 'cs:{check}:access').then(
      () => null,
      (e: unknown) => e,
    );
    if (!(answer instanceof Error && /^NOSCRIPT/.test(answer.message))) throw answer;
    // A replica answers reads and NOSCRIPT alike and refuses the first write: a worker then logged BullMQ's READONLY
    // thousands of times a second, and `run` ended with Redis's bare words. DEL of a key nobody has is a write that
    // changes nothing; a replica refuses it as any other.
    const wrote = await client.del('cs:{check}:access').then(
      () => null,
      (e: unknown) => e,
    );
    if (isReadOnlyError(wrote)) throw new RedisConnectError(shown, 'replica', await primaryOf(client));
    // A primary short of replicas (min-replicas-to-write) or loading is a passing state the crawl waits through.
    if (wrote instanceof Error && !/^(NOREPLICAS|MASTERDOWN|LOADING)\b/.test(wrote.message)) throw wrote;
    // INFO may be denied to the user: then nothing is said.
    const memory = await readMemory(client).catch(() => null);
    return { eviction: memory ? evictionRisk(shown, memory) : null };
  }
  return { eviction: null };
}

/** "its primary is h:p", from the replica's INFO replication; '' when it does not say (INFO denied, no link yet). */
async function primaryOf(client: Redis): Promise<string> {
  const info = await client.info('replication').catch(() => '');
  const host = /^master_host:(\S+)/m.exec(info)?.[1];
  const port = /^master_port:(\d+)/m.exec(info)?.[1];
  return host && port ? `its primary is ${host}:${port}` : '';
}

/** What a check found about a target that can be used, for the command to say once. */
export interface RedisNotes {
  /** Its eviction policy deletes keys under memory pressure (memory.ts evictionRisk); null: it does not. */
  readonly eviction: string | null;
}

/** Of the first error and the one the call rejected with, the one that says more. */
function pickCause(first: unknown, last: unknown): unknown {
  return classifyRedisError(first).cause !== 'other' ? first : last;
}

/**
 * Rejects with the 'database' cause when the target names a database that Redis refuses to SELECT. For the run
 * launcher, which every front end calls: the CLI checks the whole target first, the editor and the library did not,
 * and their connections went on in database 0. Any other failure is left to the caller's own connection, which
 * waits for a Redis that is not there yet.
 */
export async function checkDatabase(text: string): Promise<void> {
  if (targetDatabase(parseRedisTarget(text)) === 0) return;
  try {
    await checkRedis(text);
  } catch (err) {
    if (err instanceof RedisConnectError && err.cause_ === 'database') throw err;
  }
}

/**
 * Rejects when the target's database cannot be selected, the user may not run a crawl's scripts, or the target is a
 * read-only replica: for the run
 * launcher, which every front end calls (the CLI checks first, the editor and the library do not). As checkDatabase,
 * any other failure is left to the caller's own connection.
 */
export async function checkCrawlAccess(text: string): Promise<RedisNotes> {
  try {
    return await checkRedis(text, CHECK_TIMEOUT_MS, 'crawl');
  } catch (err) {
    if (err instanceof RedisConnectError && ['database', 'permission', 'replica'].includes(err.cause_)) throw err;
    return { eviction: null };
  }
}

/** The causes a wait can outlast (Redis starting, a network coming back); the others need a person. */
const PASSING: ReadonlySet<RedisFailureCause> = new Set(['refused', 'name', 'timeout']);

/** Seconds before the next try: 1, 2, 4, 8, 16, then every 30. */
function retryDelaySeconds(attempt: number): number {
  return Math.min(2 ** (attempt - 1), 30);
}

/**
 * For long-lived processes (`worker`, `writer`): checks the target until it answers, saying so on every attempt as a
 * Celery worker does ("cannot connect to redis://h:6379: connection refused; trying again in 2 s (attempt 2)"). A
 * cause that waiting cannot cure (a wrong password, TLS, the wrong deployment) rejects at once.
 */
export async function waitForRedis(
  text: string,
  say: (line: string) => void,
  timeoutMs = CHECK_TIMEOUT_MS,
): Promise<RedisNotes> {
  for (let attempt = 1; ; attempt++) {
    try {
      const notes = await checkRedis(text, timeoutMs, 'crawl');
      if (attempt > 1) say(`connected to ${describeTarget(text)}`);
      return notes;
    } catch (err) {
      if (!(err instanceof RedisConnectError) || !PASSING.has(err.cause_)) throw err;
      const delay = retryDelaySeconds(attempt);
      say(`cannot connect to ${err.target}: ${err.short}; trying again in ${delay} s (attempt ${attempt})`);
      await new Promise((r) => setTimeout(r, delay * 1000));
    }
  }
}

/** How long the connection was lost, in total, while it was watched. */
export interface ConnectionWatch {
  /** Time without the connection over its whole life, the outage going on included (ms). */
  outageMs(): number;
  /** How long the connection has been lost, now (ms); 0 while it is up. */
  downForMs(): number;
  /** While it is lost: the target, why and for how long ("redis://h:6379: connection refused, for 12 s"); else null. */
  lost(): string | null;
}

/**
 * Says each reconnect of an engine connection (connect.ts reconnects forever) with its cause and attempt, and when
 * it is back with how long it was gone: a Redis lost mid-run is said as a Redis missing at the start is.
 */
export function watchConnection(
  client: Redis,
  text: string,
  say: (level: 'warn' | 'info', line: string) => void,
): ConnectionWatch {
  const shown = describeTarget(text);
  let lastError: unknown;
  let downSince = 0;
  let attempts = 0;
  let total = 0;
  let lastWhy = 'connection closed';
  // A node that refuses writes (a failover demoted it, its replicas are gone) answers every reconnect and refuses the
  // next write, so a reconnect follows each 'ready': said once, and back only once it has taken writes for a while.
  let refusing = false;
  let settling: NodeJS.Timeout | undefined;
  client.on('error', (err: Error) => {
    lastError = err;
  });
  client.on(RECONNECT_CAUSE, (err: Error) => {
    lastError = err;
    clearTimeout(settling);
  });
  const back = () => {
    const gone = Date.now() - downSince;
    total += gone;
    downSince = 0;
    attempts = 0;
    refusing = false;
    say('info', `connected to ${shown} again after ${(gone / 1000).toFixed(1)} s`);
  };
  client.on('reconnecting', (delayMs: unknown) => {
    if (!downSince) downSince = Date.now();
    attempts++;
    // A refusal the client reconnects for (connect.ts): said once, as what it is, until the node takes writes.
    const refusal = refusalWords(lastError);
    if (refusal) {
      lastError = undefined;
      if (!refusing) say('warn', `lost ${shown}: ${refusal}`);
      refusing = true;
      lastWhy = refusal.slice(0, refusal.indexOf(';'));
      return;
    }
    // The first reconnect of a lost connection often comes before any error: the server closed it.
    const { cause } = classifyRedisError(lastError);
    const closed = lastError === undefined || cause === 'other';
    const why = closed ? 'connection closed' : CAUSE_TEXT[cause];
    lastError = undefined;
    // While it refuses, its reconnects close the connection; a cause of its own (refused, a timeout) is news.
    if (refusing && closed) return;
    refusing = false;
    lastWhy = why;
    const wait = typeof delayMs === 'number' ? `${Math.max(1, Math.round(delayMs / 1000))} s` : 'a moment';
    say('warn', `lost ${shown}: ${why}; trying again in ${wait} (attempt ${attempts})`);
  });
  client.on('ready', () => {
    if (!downSince) return;
    clearTimeout(settling);
    if (!refusing) return back();
    settling = setTimeout(back, REFUSAL_SETTLE_MS);
    settling.unref();
  });
  return {
    outageMs: () => total + (downSince ? Date.now() - downSince : 0),
    downForMs: () => (downSince ? Date.now() - downSince : 0),
    lost: () => (downSince ? `${shown}: ${lastWhy}, for ${Math.round((Date.now() - downSince) / 1000)} s` : null),
  };
}
