import { dirname, join } from 'node:path';
import { startManagedRedis, type ManagedRedis } from '../redis/server';
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
  readonly managed: ManagedRedis | null;
  describe(): string;
  release(): Promise<void>;
}

export function dataDirFor(taskFile: string): string {
  return join(dirname(taskFile), '.crawl');
}

export async function chooseRedis(target: string | undefined, taskFile: string, opts: { keepRunning?: boolean } = {}): Promise<RedisChoice> {
  const explicit = target ?? process.env[REDIS_URL_ENV];
  if (explicit) {
    // A malformed target is refused here, before anything starts, with what is wrong (redacted).
    parseRedisTarget(explicit);
    return { url: explicit, managed: null, describe: () => redactUrl(explicit), release: async () => undefined };
  }
  const managed = await startManagedRedis({ dataDir: join(dataDirFor(taskFile), 'redis') });
  return {
    url: managed.url,
    managed,
    describe: () => `${managed.url} (private redis-server, pid ${managed.pid}${managed.owned ? '' : ', reused'}, data in ${join(dataDirFor(taskFile), 'redis')})`,
    release: async () => {
      if (!opts.keepRunning) await managed.stop();
    },
  };
}
