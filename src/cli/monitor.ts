import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { connectRedis, redactUrl } from '../redis/connect';
import { watchConnection } from '../redis/check';
import { REDIS_FLAG_SPEC, redisTargetFrom } from '../worker/args';
import { generateToken } from '../monitor/auth';
import { startMonitor } from '../monitor/server';
import { formatLogLine, LOG_FORMAT_ENV, parseLogFormat, type Log, type LogFormat } from '../core/logLine';

// `crawl-studio monitor`: its options, then the server of src/monitor. The token is read from the environment or
// `--token`, or made here and printed once, to stderr only.

export const MONITOR_USAGE = `crawl-studio monitor REDIS [--port 5555] [--bind 127.0.0.1] [--token T] [--allow-host NAME]... [--hide-workers-after SECONDS] [--log-format human|json]

A web monitor of every task, run and worker on one Redis, with its JSON API (/api/tasks, /api/tasks/TASK,
/api/workers), Prometheus metrics (/metrics) and /healthcheck. Actions (pause, resume, stop a run, retry failed pages
by reason, add URLs) need the token in a header (Authorization: Bearer T, or X-Crawl-Studio-Token: T); the page asks for it.
The token: $CRAWL_STUDIO_MONITOR_TOKEN (preferred: an argument shows in ps), --token, or else one made at start and
printed once to stderr. --bind beyond loopback needs a given token. --allow-host NAME: a Host name the monitor also
answers to (behind a proxy, or scraped by name); others are refused (DNS rebinding). --hide-workers-after: workers
silent that long leave the default view (default 600 s). Every action taken or refused is logged (task, action,
result; never the token). --log-format json: one JSON object a line; a token is then never printed: give it
($CRAWL_STUDIO_MONITOR_TOKEN), or the monitor stays read-only.`;

const MONITOR_TOKEN_ENV = 'CRAWL_STUDIO_MONITOR_TOKEN';
const CONNECT_TIMEOUT_MS = 10_000;

export class MonitorUsageError extends Error {}

/** The command line read and checked; null when it asks for help. */
interface MonitorArgs {
  readonly target: string;
  readonly bind: string;
  readonly port: number;
  readonly hideWorkersAfterMs: number;
  readonly allowHosts: string[];
  readonly format: LogFormat;
  /** The token given ($CRAWL_STUDIO_MONITOR_TOKEN or --token), if any. */
  readonly given: string | undefined;
}

export async function cmdMonitor(args: string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const a = monitorArgs(args, env);
  if (!a) {
    console.log(MONITOR_USAGE);
    return 0;
  }
  const log: Log = (level, message, fields = {}) =>
    process.stdout.write(`${formatLogLine(a.format, Date.now(), level, message, { event: 'monitor', ...fields })}\n`);
  const token = a.given || generateToken();
  const redis = connectRedis(a.target);
  redis.on('error', () => undefined);
  // A Redis lost while the monitor runs is said in its log, on every reconnect and when it is back, and in its answers.
  const connection = watchConnection(redis, a.target, (level, line) =>
    log(level, line, { event: level === 'warn' ? 'redis-lost' : 'redis-back' }),
  );
  try {
    await pingWithin(redis, CONNECT_TIMEOUT_MS, redactUrl(a.target));
    const monitor = await startMonitor({
      redis,
      bind: a.bind,
      port: a.port,
      token,
      tokenGiven: Boolean(a.given),
      allowHosts: a.allowHosts,
      hideWorkersAfterMs: a.hideWorkersAfterMs,
      scriptPath: join(__dirname, 'media', 'monitor', 'main.js'),
      log,
      redisLost: () => connection.lost(),
    });
    sayStarted(a, log, monitor.url, token);
    const signal = await new Promise<string>((resolve) => {
      process.once('SIGINT', () => resolve('SIGINT'));
      process.once('SIGTERM', () => resolve('SIGTERM'));
    });
    if (a.format === 'json') log('info', `${signal}: monitor stopping`, { event: 'monitor-stopping' });
    await monitor.close();
    return 0;
  } finally {
    redis.disconnect();
  }
}

function monitorArgs(args: string[], env: NodeJS.ProcessEnv): MonitorArgs | null {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      ...REDIS_FLAG_SPEC,
      port: { type: 'string', default: '5555' },
      bind: { type: 'string', default: '127.0.0.1' },
      token: { type: 'string' },
      'allow-host': { type: 'string', multiple: true },
      'hide-workers-after': { type: 'string', default: '600' },
      'log-format': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) return null;
  if (positionals.length > 0)
    throw new MonitorUsageError(
      `monitor takes no task file (it shows every task on the Redis), not '${positionals[0]}'`,
    );
  const port = Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new MonitorUsageError(`--port must be a port number, not '${values.port}'`);
  const hideSecs = Number(values['hide-workers-after']);
  if (!Number.isFinite(hideSecs) || hideSecs < 0)
    throw new MonitorUsageError(`--hide-workers-after must be seconds, not '${values['hide-workers-after']}'`);
  const target = redisTargetFrom(values, env);
  if (!target)
    throw new MonitorUsageError(
      'monitor needs the Redis to watch: --redis URL (or --sentinel, --cluster, $CRAWL_STUDIO_REDIS)',
    );
  let format: LogFormat;
  try {
    format = parseLogFormat(values['log-format'] ?? env[LOG_FORMAT_ENV]);
  } catch (err) {
    throw new MonitorUsageError((err as Error).message, { cause: err });
  }
  const given = env[MONITOR_TOKEN_ENV] || values.token;
  const allowHosts = values['allow-host'] ?? [];
  return { target, bind: values.bind, port, hideWorkersAfterMs: hideSecs * 1000, allowHosts, format, given };
}

/** Where the monitor is; a token made here printed once, to stderr only: stdout is often a log file. */
function sayStarted(a: MonitorArgs, log: Log, url: string, token: string): void {
  const started = `Crawl Studio monitor of ${redactUrl(a.target)} on ${url}/ (metrics: ${url}/metrics; Ctrl-C to stop)`;
  if (a.format === 'human') console.log(started);
  else log('info', started, { event: 'monitor-started', url: `${url}/`, metrics: `${url}/metrics` });
  // A log for machines never carries a token (it is shipped).
  if (!a.given && a.format === 'human')
    console.error(`Actions token (shown once): ${token}\nOpen ${url}/#token=${token} to act from the page.`);
  if (!a.given && a.format === 'json')
    log(
      'warn',
      `no token given ($${MONITOR_TOKEN_ENV}): the monitor is read-only (a made one would have to be printed into this log)`,
      { event: 'monitor-read-only' },
    );
}

async function pingWithin(redis: ReturnType<typeof connectRedis>, ms: number, target: string): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  let onError: ((err: Error) => void) | undefined;
  try {
    await Promise.race([
      redis.ping(),
      // A refused or unresolvable target says so at once (the client would retry it quietly until the timeout).
      new Promise<never>((_, reject) => redis.once('error', (onError = (err: Error) => reject(err)))),
      new Promise<never>(
        (_, reject) =>
          (timer = setTimeout(
            () =>
              reject(
                new Error(
                  `Redis at ${target} did not answer within ${ms / 1000} s: is it running, and is the address right?`,
                ),
              ),
            ms,
          )),
      ),
    ]);
  } catch (err) {
    const msg = err instanceof Error ? err.message : String(err);
    throw new Error(msg.includes(target) ? msg : `cannot reach Redis at ${target}: ${msg}`, { cause: err });
  } finally {
    clearTimeout(timer);
    if (onError) redis.off('error', onError);
  }
}
