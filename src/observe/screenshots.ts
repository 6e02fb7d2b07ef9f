import type { Redis } from '../redis/connect';
import { taskKeys } from '../frontier/keys';
import type { ScreenshotFacts } from '../frontier/screenshots';

// The screenshots of rendered pages a run keeps (frontier/screenshots.ts, kept by the workers), for the editor's
// failure view and `crawl-studio screenshot`.

/** The screenshot of `url` in `run`, or null. */
export async function readScreenshot(
  redis: Redis,
  task: string,
  run: string,
  url: string,
): Promise<{ facts: ScreenshotFacts; jpeg: Buffer } | null> {
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
export async function screenshotFacts(
  redis: Redis,
  task: string,
  run: string,
  limit: number,
): Promise<ScreenshotFacts[]> {
  const urls = await redis.zrevrange(taskKeys(task).screenshotOrder(run), 0, limit - 1);
  if (urls.length === 0) return [];
  const metas = await redis.hmget(taskKeys(task).screenshots(run), ...urls.map((u) => `m:${u}`));
  return metas.filter((m): m is string => m !== null).map((m) => JSON.parse(m) as ScreenshotFacts);
}
