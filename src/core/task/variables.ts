// Which `${VARIABLE}`s a task file may use, and where each may go. Pure: names in, verdicts out.
//
// A task file is untrusted input: it is shared, downloaded, written by someone else, and it names the hosts its
// requests go to. Whatever variable it may expand, it can send to a host of its choosing. So:
//   - The project's own settings and connection secrets (the Redis URL and passwords, the browser, the worker's
//     plumbing) are never expanded in a task file, whatever its field: RESERVED_VARIABLES and the reserved
//     prefixes. The CLI and the editor read them; a task file cannot.
//   - Every other variable a task file may use is named CRAWL_STUDIO_* (or, in store.url, one of libpq's PG*), so
//     `${HOME}` or `${AWS_SECRET_ACCESS_KEY}` never leave the machine either.
//   - A secret goes only where it belongs, told by its name: a store variable (PG*, CRAWL_STUDIO_DB_*,
//     CRAWL_STUDIO_PG*, CRAWL_STUDIO_STORE_*) only in store.url; a proxy variable (CRAWL_STUDIO_PROXY*,
//     CRAWL_STUDIO_SOCKS*) only in proxy.urls; a webhook variable (CRAWL_STUDIO_WEBHOOK*) only in notify.webhook,
//     which takes nothing else (its whole URL is the variable's, so the file cannot choose where changes go); any other CRAWL_STUDIO_* in requests (headers, bodies), the login
//     and proxies. Login credentials (the variables `login` uses) stay in the login: loginProblems says so.
// The worker applies the same rules as it expands (secrets.ts, body.ts), so a task that skipped `validate` (a job
// written by hand, an object given to the library) sends nothing more.

/** Prefix of the variables a task file may expand (besides libpq's, in store.url only). */
const ENV_PREFIX = 'CRAWL_STUDIO_';

/** The libpq environment variables (https://www.postgresql.org/docs/current/libpq-envars.html) a store URL may use. */
const LIBPQ_VARIABLES: readonly string[] = [
  'PGHOST',
  'PGHOSTADDR',
  'PGPORT',
  'PGDATABASE',
  'PGUSER',
  'PGPASSWORD',
  'PGOPTIONS',
  'PGAPPNAME',
  'PGSSLMODE',
  'PGSSLROOTCERT',
  'PGSSLCERT',
  'PGSSLKEY',
  'PGCONNECT_TIMEOUT',
  'PGTARGETSESSIONATTRS',
];

/**
 * The variables Crawl Studio itself reads (its connection secrets and settings): never expanded in a task file.
 * test/unit/variables.test.ts checks that every CRAWL_STUDIO_* name the code reads from the environment is here.
 */
export const RESERVED_VARIABLES: readonly string[] = [
  'CRAWL_STUDIO_REDIS',
  'CRAWL_STUDIO_REDIS_PASSWORD',
  'CRAWL_STUDIO_SENTINEL_PASSWORD',
  'CRAWL_STUDIO_BROWSER',
  'CRAWL_STUDIO_BROWSER_ARGS',
  'CRAWL_STUDIO_CODE_CACHE',
  'CRAWL_STUDIO_STOP_DEADLINE',
  'CRAWL_STUDIO_PARENT_PIPE',
  // The web monitor's actions token (cli/monitor.ts): a task file that read it could hand it to a site.
  'CRAWL_STUDIO_MONITOR_TOKEN',
  'CRAWL_STUDIO_LOG_FORMAT',
  'CRAWL_STUDIO_LOG_LEVEL',
  // The private redis-server's data folder, for the workers a run or a window starts on it (redis/serverOwners.ts).
  'CRAWL_STUDIO_PRIVATE_REDIS_DIR',
];

/** Names kept for the project's own use, present and future (a Redis or Sentinel setting of any name). */
const RESERVED_PREFIX = /^CRAWL_STUDIO_(REDIS|SENTINEL)(_|$)/;
const STORE_NAME = /^CRAWL_STUDIO_(DB|PG|STORE)(_|$)/;
const PROXY_NAME = /^CRAWL_STUDIO_(PROXY|SOCKS)(_|$)/;
const WEBHOOK_NAME = /^CRAWL_STUDIO_WEBHOOK(_|$)/;

/** What a variable is, by its name; null: not one a task file may use at all. */
export type VariableKind = 'reserved' | 'store' | 'proxy' | 'webhook' | 'secret';

/** Where in a task file a variable stands. */
export type VariablePlace = 'request' | 'login' | 'proxy' | 'store' | 'webhook';

const PLACE_NAMES: Record<VariablePlace, string> = {
  request: 'request headers and bodies',
  login: 'the login',
  proxy: 'proxy.urls',
  store: 'store.url',
  webhook: 'notify.webhook',
};

/** A `CRAWL_STUDIO_<something>` name. */
function isCrawlStudioVariable(name: string): boolean {
  return name.startsWith(ENV_PREFIX) && name.length > ENV_PREFIX.length;
}

export function variableKind(name: string): VariableKind | null {
  if (RESERVED_VARIABLES.includes(name) || RESERVED_PREFIX.test(name)) return 'reserved';
  if (LIBPQ_VARIABLES.includes(name) || STORE_NAME.test(name)) return 'store';
  if (PROXY_NAME.test(name)) return 'proxy';
  if (WEBHOOK_NAME.test(name)) return 'webhook';
  return isCrawlStudioVariable(name) ? 'secret' : null;
}

/** Whether a task file's value at `place` may expand `name`. */
export function mayUse(name: string, place: VariablePlace): boolean {
  return variableProblem(name, place) === null;
}

function shown(name: string): string {
  return name.length > 60 ? name.slice(0, 59) + '…' : name;
}

/** Why `${name}` may not stand at `place`, or null when it may. Names only, never a value. */
export function variableProblem(name: string, place: VariablePlace): string | null {
  const n = `\${${shown(name)}}`;
  switch (variableKind(name)) {
    case null:
      return place === 'store'
        ? `${n} is not expanded: a task file may use only variables named ${ENV_PREFIX}* and the PostgreSQL ones (${LIBPQ_VARIABLES.slice(0, 6).join(', ')}, …); rename it, e.g. \${${ENV_PREFIX}${shown(name)}}`
        : `${n} is not expanded: a task file may use only variables named ${ENV_PREFIX}* here; rename it, e.g. \${${ENV_PREFIX}${shown(name)}}`;
    case 'reserved':
      return `${n} is not expanded: it is one of Crawl Studio's own settings (its Redis connection, its browser, its workers), which a task file may never use, since it could send them to any host it names; give the value a name of its own, e.g. \${${ENV_PREFIX}TOKEN}`;
    case 'store':
      return place === 'store'
        ? null
        : `${n} is a store variable (PG*, ${ENV_PREFIX}DB_*, ${ENV_PREFIX}PG*, ${ENV_PREFIX}STORE_*): it goes only in store.url, not in ${PLACE_NAMES[place]}`;
    case 'proxy':
      return place === 'proxy'
        ? null
        : `${n} is a proxy variable (${ENV_PREFIX}PROXY*, ${ENV_PREFIX}SOCKS*): it goes only in proxy.urls, to the proxy, not in ${PLACE_NAMES[place]}`;
    case 'webhook':
      return place === 'webhook'
        ? null
        : `${n} is a webhook variable (${ENV_PREFIX}WEBHOOK*): it goes only in notify.webhook, not in ${PLACE_NAMES[place]}`;
    case 'secret':
      return place === 'webhook'
        ? `${n} cannot name the webhook: notify.webhook takes only a variable named ${ENV_PREFIX}WEBHOOK* (e.g. \${${ENV_PREFIX}WEBHOOK_URL}), so a task file cannot send other secrets there`
        : null;
  }
}

/** Where a store URL's password may go: a loopback host, or a host the user's environment names. */
export function isLoopbackHost(host: string): boolean {
  const h = host.toLowerCase().replace(/^\[|\]$/g, '');
  return (
    h === 'localhost' ||
    h.endsWith('.localhost') ||
    /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h) ||
    h === '::1' ||
    h === '0:0:0:0:0:0:0:1'
  );
}
