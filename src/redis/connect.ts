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

// Kept here too for the engine's callers; the extension imports it from core (no ioredis at activation).
export { redactUrl } from '../core/url/redact';
