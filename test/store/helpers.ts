import type { Redis } from '../../src/redis/connect';
import { connectRedis } from '../../src/redis/connect';
import type { ExtractedItem } from '../../src/core/extract/extract';
import type { PageRecord } from '../../src/store/types';
import { type RedisServer, startRedis } from '../support/services';
import { skipBecause } from '../support/skip';

// Shared by the store suites: page builders and service start-up with the CI rule (a missing service fails in
// CI, skips elsewhere).

export function page(task: string, url: string, items: ExtractedItem[], extra: Partial<PageRecord> = {}): PageRecord {
  return {
    task,
    run: 'r1',
    url,
    rule: 'list',
    depth: 1,
    status: 200,
    fetchedAt: 1_700_000_000_000,
    contentType: 'text/html',
    bytes: 1234,
    items,
    problems: [],
    ...extra,
  };
}

export function product(key: string, extra: Record<string, string | string[] | null> = {}): ExtractedItem {
  return { type: 'product', key, data: { sku: key, name: `Product ${key}`, tags: ['a', 'b'], ...extra } };
}

/** Starts Redis for the suite whose `before` hook `ctx` is, or skips the suite saying why (a failure in CI). */
export async function redisForSuite(ctx: Mocha.Context): Promise<RedisServer> {
  try {
    return await startRedis();
  } catch (err) {
    return skipBecause(ctx, `redis-server cannot start: ${(err as Error).message}`);
  }
}

export function connect(server: RedisServer): Redis {
  return connectRedis(server.url);
}

export async function waitFor(what: string, cond: () => Promise<boolean> | boolean, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

let counter = 0;
/** A task name unique within the test process, so suites sharing a Redis never see each other's streams. */
export function uniqueTask(prefix: string): string {
  return `${prefix}-${process.pid}-${++counter}`;
}
