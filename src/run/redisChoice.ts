import { dirname, join } from 'node:path';
import { startManagedRedis, type ManagedRedis } from '../redis/server';
import { isAlive, PRIVATE_REDIS_DIR_ENV } from '../redis/serverOwners';
import { redactUrl } from '../redis/connect';
import { parseRedisTarget } from '../core/url/redisTarget';
import { REDIS_URL_ENV } from '../worker/args';

// Which Redis a CLI command or a library run talks to: the target the CLI's flags (--redis, --sentinel, --cluster:
// see worker/args.ts redisTargetFrom) or the library's `redis` option name, a redis://, redis+sentinel:// or
// redis+cluster:// URL (core/url/redisTarget.ts); else $CRAWL_STUDIO_REDIS; else the project's private server
// (started on demand, data under .crawl/redis next to the task file, reused while it runs).

export interface RedisChoice {
  /** The target as one string (a redis://, redis+sentinel:// or redis+cluster:// URL); may hold passwords. */
  readonly url: string;
  /** The private server now (another one after a restart), or null for a given target. */
  readonly managed: ManagedRedis | null;
  describe(): string;
  release(): Promise<void>;
  /** For a process about to exit: gives a private server up without waiting. */
  abandon(): void;
}

export interface RedisChoiceOptions {
  /** Leave the private server running when released (commands that only read or enqueue). */
  readonly keepRunning?: boolean;
  /**
   * Watch the private server while it is held: one that dies (killed, crashed) is said at once and started again on
   * its port with its data (its append-only file keeps the crawl), and every client reconnects by itself (issue 35,
   * item 4). `say` gets each event; `lost` gets why, when it could not be started again: the run must stop.
   */
  readonly watch?: { readonly say: (message: string) => void; readonly lost: (err: Error) => void };
}

export function dataDirFor(taskFile: string): string {
  return join(dirname(taskFile), '.crawl');
}

/** Restarts within this long count towards MAX_RESTARTS: a server that keeps dying is not restarted for ever. */
const RESTART_WINDOW_MS = 60_000;
const MAX_RESTARTS = 3;
const WATCH_MS = 250;

export async function chooseRedis(
  target: string | undefined,
  taskFile: string,
  opts: RedisChoiceOptions = {},
): Promise<RedisChoice> {
  const explicit = target ?? process.env[REDIS_URL_ENV];
  if (explicit) {
    // A malformed target is refused here, before anything starts, with what is wrong (redacted).
    parseRedisTarget(explicit);
    delete process.env[PRIVATE_REDIS_DIR_ENV];
    return {
      url: explicit,
      managed: null,
      describe: () => redactUrl(explicit),
      release: async () => undefined,
      abandon: () => undefined,
    };
  }
  const dataDir = join(dataDirFor(taskFile), 'redis');
  // The workers this process starts inherit it, and keep the server up until they finished their pages.
  process.env[PRIVATE_REDIS_DIR_ENV] = dataDir;
  const start = () => startManagedRedis({ dataDir, user: !opts.keepRunning });
  let managed = await start();
  let released = false;
  let timer: NodeJS.Timeout | undefined;
  if (opts.watch && !opts.keepRunning) {
    const { say, lost } = opts.watch;
    const restarts: number[] = [];
    let restarting = false;
    timer = setInterval(() => {
      if (released || restarting || isAlive(managed.pid)) return;
      restarting = true;
      const dead = managed;
      const now = Date.now();
      restarts.splice(0, restarts.length, ...restarts.filter((t) => now - t < RESTART_WINDOW_MS), now);
      void (async () => {
        if (restarts.length > MAX_RESTARTS)
          throw new Error(`it stopped ${restarts.length} times within a minute; not started again`);
        say(
          `the private redis-server (pid ${dead.pid}, ${dead.url}) stopped unexpectedly: starting it again with its data (its append-only file keeps the crawl)…`,
        );
        const next = await start();
        if (released) return void (await next.stop());
        managed = next;
        say(`the private redis-server is back (pid ${next.pid}, ${next.url}); the crawl carries on`);
      })()
        .catch((err: Error) => {
          clearInterval(timer);
          lost(
            new Error(
              `the private redis-server (pid ${dead.pid}, ${dead.url}) stopped unexpectedly and could not be started again: ${err.message}`,
            ),
          );
        })
        .finally(() => (restarting = false));
    }, WATCH_MS);
    timer.unref();
  }
  const stopWatching = () => {
    released = true;
    clearInterval(timer);
  };
  return {
    get url() {
      return managed.url;
    },
    get managed() {
      return managed;
    },
    describe: () =>
      `${managed.url} (private redis-server, pid ${managed.pid}${managed.owned ? '' : ', reused'}, data in ${dataDir})${managed.note ? `; ${managed.note}` : ''}`,
    release: async () => {
      stopWatching();
      if (!opts.keepRunning) await managed.stop();
    },
    abandon: () => {
      stopWatching();
      if (!opts.keepRunning) managed.abandon();
    },
  };
}
