import { Redis, type RedisOptions } from 'ioredis';

// One way to open Redis for every part of the engine. BullMQ workers need maxRetriesPerRequest: null (blocking
// commands must wait through reconnects instead of failing); we use it everywhere so a Redis restart stalls the
// crawl instead of failing it.

export function connectRedis(url: string, extra: RedisOptions = {}): Redis {
  const redis = new Redis(url, {
    maxRetriesPerRequest: null,
    enableReadyCheck: true,
    // Reconnect forever, with a capped backoff: workers on other machines must survive a Redis restart.
    retryStrategy: (times) => Math.min(100 * 2 ** Math.min(times, 6), 3_000),
    connectionName: 'crawl-studio',
    ...extra,
  });
  // Without a listener ioredis prints every reconnect error; callers that care subscribe themselves.
  redis.on('error', () => undefined);
  return redis;
}

/** Redacts the password of a redis:// URL for logs and messages. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return url.replace(/\/\/([^:@/]*):[^@/]*@/, '//$1:***@');
  }
}
