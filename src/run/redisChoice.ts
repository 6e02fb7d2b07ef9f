import { dirname, join } from 'node:path';
import { startManagedRedis, type ManagedRedis } from '../redis/server';
import { redactUrl } from '../redis/connect';

// Which Redis a CLI command or a library run talks to: --redis (the `redis` option), else $CRAWL_STUDIO_REDIS,
// else the project's private server (started on demand, data under .crawl/redis next to the task file, reused
// while it runs).

export interface RedisChoice {
  readonly url: string;
  readonly managed: ManagedRedis | null;
  describe(): string;
  release(): Promise<void>;
}

export function dataDirFor(taskFile: string): string {
  return join(dirname(taskFile), '.crawl');
}

export async function chooseRedis(flag: string | undefined, taskFile: string, opts: { keepRunning?: boolean } = {}): Promise<RedisChoice> {
  const explicit = flag ?? process.env.CRAWL_STUDIO_REDIS;
  if (explicit) {
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
