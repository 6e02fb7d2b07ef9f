import type { ChildProcess } from 'node:child_process';
import { Redis } from 'ioredis';
import { startRedis, type HttpServer, type RedisServer } from './services';

/** What a suite of CLI processes crawls with: set once its `before` hook has run. */
export interface CliSuite {
  readonly redis: RedisServer;
  readonly web: HttpServer;
  /** A connection of the test's own, to read what the processes wrote. */
  readonly conn: Redis;
  /** The processes the tests start: any still running after the suite is killed. */
  readonly children: ChildProcess[];
}

/**
 * Registers the hooks of a suite that drives `crawl-studio` processes against a real redis-server and a local site:
 * both started before its tests; after them every child still running killed, the connection closed, both stopped.
 */
export function cliSuite(site: () => Promise<HttpServer>): CliSuite {
  const s = { children: [] as ChildProcess[] } as { -readonly [K in keyof CliSuite]: CliSuite[K] };
  before(async () => {
    s.redis = await startRedis();
    s.web = await site();
    s.conn = new Redis(s.redis.url);
  });
  after(async () => {
    for (const c of s.children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    s.conn?.disconnect();
    await s.web?.close();
    await s.redis?.stop();
  });
  return s;
}
