import { createHash } from 'node:crypto';
import { mkdir, readdir, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { JobRequest } from '../core/request/build';

// Pages the designer fetched, kept on disk next to the task file (`.crawl/pages/`), so the preview works
// offline and a reopened preview shows its page at once. One page is two files named by a hash of its URL:
// `<hash>.html` (the body as fetched) and `<hash>.json` (what the fetch returned).

export interface CachedPageMeta {
  readonly url: string;
  readonly finalUrl: string;
  readonly status: number;
  readonly contentType: string | null;
  readonly bytes: number;
  readonly redirects: number;
  /** ISO time of the fetch. */
  readonly fetchedAt: string;
  /** The rule the page was last previewed with: zero-match warnings for that rule are computed on it. */
  readonly rule?: string | null;
  /** The HTML is a browser's DOM after the page's scripts ran (the designer's Browser toggle), not the response. */
  readonly rendered?: boolean;
  /** The rule's `browser.actions` as they ran on the rendered page, one line a step (core/task/actions.ts formatStep). */
  readonly actions?: readonly string[];
  /** What the page was seen to get wrong as it was fetched: a charset that garbles it, cards that came after load. */
  readonly warnings?: readonly string[];
  /** The request, when it was not a plain GET (its body's variables by name): the page is cached under its key. */
  readonly request?: JobRequest;
  /** The cache key: requestKey(url, request); absent for a plain GET, whose key is its URL. */
  readonly key?: string;
}

/** The key a page is cached under: its URL, or its request's key (method, URL and body). */
export function cacheKeyOf(meta: Pick<CachedPageMeta, 'url' | 'key'>): string {
  return meta.key ?? meta.url;
}

export interface CachedPage {
  readonly meta: CachedPageMeta;
  readonly html: string;
}

/** `<folder of the task file>/.crawl/pages`. */
export function pageCacheDir(taskFile: string): string {
  return join(dirname(taskFile), '.crawl', 'pages');
}

export function pageKey(url: string): string {
  return createHash('sha256').update(url).digest('hex').slice(0, 24);
}

/** Writes through a temporary file and a rename, so a crash never leaves half a page under the real name. */
async function writeAtomic(path: string, data: string): Promise<void> {
  const tmp = `${path}.${process.pid}.${Date.now()}.tmp`;
  await writeFile(tmp, data);
  await rename(tmp, path);
}

export async function savePage(dir: string, page: CachedPage): Promise<void> {
  await mkdir(dir, { recursive: true });
  const key = pageKey(cacheKeyOf(page.meta));
  await writeAtomic(join(dir, `${key}.html`), page.html);
  await writeAtomic(join(dir, `${key}.json`), JSON.stringify(page.meta, null, 2) + '\n');
}

function isMeta(v: unknown): v is CachedPageMeta {
  const m = v as Partial<CachedPageMeta> | null;
  return (
    !!m &&
    typeof m.url === 'string' &&
    typeof m.finalUrl === 'string' &&
    typeof m.status === 'number' &&
    typeof m.fetchedAt === 'string'
  );
}

/** The page cached under `url` (a plain GET) or a request's key. */
export async function loadPage(dir: string, url: string): Promise<CachedPage | null> {
  const key = pageKey(url);
  try {
    const meta: unknown = JSON.parse(await readFile(join(dir, `${key}.json`), 'utf8'));
    if (!isMeta(meta) || cacheKeyOf(meta) !== url) return null;
    const html = await readFile(join(dir, `${key}.html`), 'utf8');
    return { meta, html };
  } catch {
    return null;
  }
}

/** Every cached page's metadata, newest first. Unreadable entries are skipped. */
export async function listPages(dir: string): Promise<CachedPageMeta[]> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return [];
  }
  const metas: CachedPageMeta[] = [];
  for (const n of names) {
    if (!/^[0-9a-f]{24}\.json$/.test(n)) continue;
    try {
      const m: unknown = JSON.parse(await readFile(join(dir, n), 'utf8'));
      if (isMeta(m)) metas.push(m);
    } catch {
      // A half-written or foreign file: not a page.
    }
  }
  return metas.sort((a, b) => b.fetchedAt.localeCompare(a.fetchedAt));
}

/** Records which rule a cached page was last previewed with. */
export async function setPageRule(dir: string, url: string, rule: string | null): Promise<void> {
  const key = pageKey(url);
  const path = join(dir, `${key}.json`);
  try {
    const meta: unknown = JSON.parse(await readFile(path, 'utf8'));
    if (!isMeta(meta) || meta.rule === rule) return;
    await mkdir(dirname(path), { recursive: true });
    await writeAtomic(path, JSON.stringify({ ...meta, rule }, null, 2) + '\n');
  } catch {
    // Not cached: nothing to record.
  }
}
