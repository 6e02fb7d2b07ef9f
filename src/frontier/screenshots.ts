import type { Redis } from '../redis/connect';
import { taskKeys } from './keys';
import { withScripts } from './scripts';

// Screenshots of rendered pages (`browser: { screenshot: failure | always }`), for the editor's failure view and
// `crawl-studio screenshot`. They are kept in Redis because workers may run on other machines than the editor:
// one hash per run, the JPEG and its facts per URL, the newest MAX_KEPT of a run, gone a week later. Never in the
// items stream or the store: a page's items travel light, and a screenshot is for looking at, not for querying.

/** Screenshots a run keeps; a newer one pushes out the oldest. */
const MAX_KEPT = 50;
/** A capture larger than this is dropped rather than kept (a JPEG of the viewport is 20-80 KB). */
const MAX_BYTES = 512 * 1024;
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

/** Keeps a rendered page's screenshot (lua/keepScreenshot.lua); false when it is too large to keep. */
export async function keepScreenshot(
  redis: Redis,
  task: string,
  run: string,
  facts: Omit<ScreenshotFacts, 'bytes'>,
  jpeg: Buffer,
): Promise<boolean> {
  if (jpeg.byteLength > MAX_BYTES) return false;
  const keys = taskKeys(task);
  const meta = JSON.stringify({ ...facts, bytes: jpeg.byteLength });
  await withScripts(redis).csKeepScreenshot(
    keys.screenshots(run),
    keys.screenshotOrder(run),
    facts.url,
    meta,
    jpeg,
    facts.at,
    MAX_KEPT,
    TTL_MS,
  );
  return true;
}
