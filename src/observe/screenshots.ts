import type { Redis } from '../redis/connect';
import { taskKeys } from '../frontier/keys';
import type { ScreenshotFacts } from '../frontier/screenshots';

// The screenshots of rendered pages a run keeps (frontier/screenshots.ts, kept by the workers), for the editor's
// failure view and `crawl-studio screenshot`.

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
