import type { Redis } from '../redis/connect';
import { taskKeys } from '../frontier/keys';

// Screenshots of rendered pages (`browser: { screenshot: failure | always }`), for the editor's failure view and
// `crawl-studio screenshot`. They are kept in Redis because workers may run on other machines than the editor:
// one hash per run, the JPEG and its facts per URL, the newest MAX_KEPT of a run, gone a week later. Never in the
// items stream or the store: a page's items travel light, and a screenshot is for looking at, not for querying.

/** Screenshots a run keeps; a newer one pushes out the oldest. */
export const MAX_KEPT = 50;
/** A capture larger than this is dropped rather than kept (a JPEG of the viewport is 20-80 KB). */
export const MAX_BYTES = 512 * 1024;
const TTL_MS = 7 * 24 * 3600 * 1000;

export interface ScreenshotFacts {
  readonly url: string;
  /** Where the page was when it was captured (after redirects and script navigation). */
  readonly finalUrl: string;
  readonly at: number;
  /** 'rendered' for `always`, else the failure's message. */
  readonly why: string;
  readonly bytes: number;
}

// Kept, the oldest dropped past the cap, and both keys' lives renewed, in one call.
const KEEP = `redis.call('HSET', KEYS[1], 'm:' .. ARGV[1], ARGV[2], 'j:' .. ARGV[1], ARGV[3])
redis.call('ZADD', KEYS[2], ARGV[4], ARGV[1])
local over = redis.call('ZCARD', KEYS[2]) - tonumber(ARGV[5])
if over > 0 then
  for _, url in ipairs(redis.call('ZRANGE', KEYS[2], 0, over - 1)) do
    redis.call('HDEL', KEYS[1], 'm:' .. url, 'j:' .. url)
  end
  redis.call('ZREMRANGEBYRANK', KEYS[2], 0, over - 1)
end
redis.call('PEXPIRE', KEYS[1], ARGV[6])
redis.call('PEXPIRE', KEYS[2], ARGV[6])
return 1`;

export async function keepScreenshot(redis: Redis, task: string, run: string, facts: Omit<ScreenshotFacts, 'bytes'>, jpeg: Buffer): Promise<boolean> {
  if (jpeg.byteLength > MAX_BYTES) return false;
  const keys = taskKeys(task);
  const meta = JSON.stringify({ ...facts, bytes: jpeg.byteLength });
  await redis.eval(KEEP, 2, keys.screenshots(run), keys.screenshotOrder(run), facts.url, meta, jpeg, String(facts.at), String(MAX_KEPT), String(TTL_MS));
  return true;
}

/** The screenshot of `url` in `run`, or null. */
export async function readScreenshot(redis: Redis, task: string, run: string, url: string): Promise<{ facts: ScreenshotFacts; jpeg: Buffer } | null> {
  const key = taskKeys(task).screenshots(run);
  const [meta, jpeg] = await Promise.all([redis.hget(key, `m:${url}`), redis.hgetBuffer(key, `j:${url}`)]);
  if (!meta || !jpeg) return null;
  return { facts: JSON.parse(meta) as ScreenshotFacts, jpeg };
}

/** The URLs of `run` that have a screenshot, newest first. */
export async function screenshotUrls(redis: Redis, task: string, run: string): Promise<string[]> {
  return redis.zrevrange(taskKeys(task).screenshotOrder(run), 0, -1);
}

/** The facts of `run`'s newest `limit` screenshots, newest first, without their JPEGs (a list to show). */
export async function screenshotFacts(redis: Redis, task: string, run: string, limit: number): Promise<ScreenshotFacts[]> {
  const urls = await redis.zrevrange(taskKeys(task).screenshotOrder(run), 0, limit - 1);
  if (urls.length === 0) return [];
  const metas = await redis.hmget(taskKeys(task).screenshots(run), ...urls.map((u) => `m:${u}`));
  return metas.filter((m): m is string => m !== null).map((m) => JSON.parse(m) as ScreenshotFacts);
}
