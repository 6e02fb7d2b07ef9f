import * as vscode from 'vscode';
import { chooseRule, type PreviewRequest } from '../../core/designer/preview';
import type { PreviewState } from '../../core/designer/protocol';
import { sitemapEntryOf } from '../../core/designer/sitemapPreview';
import { bodyLabel } from '../../core/request/body';
import type { CrawlTask } from '../../core/task/model';
import { settings } from '../settings';
import { NotHtmlError, type LoadedPage, type LoadedSitemap, type PageSource } from './pages';

// The page a preview shows: loaded as a page or read as a sitemap (by its URL, or by what it turned out to be),
// and how the preview's state describes it.

/** URL paths the preview reads as sitemaps before asking (`sitemap.xml`, `sitemap_index.xml.gz`, `products.xml.gz`). */
const SITEMAP_PATH = /(sitemap[^/]*\.(xml|txt)(\.gz)?|\.xml\.gz)$/i;
/** Content types a URL taken for a page may turn out to be a sitemap in. */
const SITEMAP_TYPES = /\b(xml|gzip|x-gzip|octet-stream|text\/plain)\b/i;

export interface PreviewLoad {
  readonly loaded: LoadedPage | null;
  readonly sitemap: LoadedSitemap | null;
}

export interface PreviewLoadOptions {
  readonly refetch: boolean;
  readonly signal: AbortSignal;
  /** The request when the page is not a plain GET, or a page of a series. */
  readonly request: PreviewRequest | null;
  /** Render it in a browser (the preview's Browser toggle, or the rule's `browser`). */
  readonly browser: boolean;
  /** The rule the page is analysed with, when the preview knows it already. */
  readonly rule: string | null;
  /** The variables a request of the task may name. */
  readonly secretEnv: (task: CrawlTask | null) => Promise<Readonly<Record<string, string | undefined>>>;
}

/** `url` loaded from the cache or fetched, with the task's options, as a worker would; or read as a sitemap. */
export async function loadPreviewPage(
  source: PageSource,
  url: string,
  task: CrawlTask | null,
  o: PreviewLoadOptions,
): Promise<PreviewLoad> {
  const robots = task?.sitemaps.find((s) => s.url === url)?.robots ?? false;
  if (robots || (task && sitemapEntryOf(task, url) !== null) || SITEMAP_PATH.test(new URL(url).pathname))
    return { loaded: null, sitemap: await source.loadSitemap(url, task, robots, o.signal) };
  try {
    // A rule's `evaluate` actions run the workspace's scripts: only in a trusted workspace.
    const browser = o.browser
      ? { rule: o.rule, path: settings.browserPath() || undefined, scripts: vscode.workspace.isTrusted }
      : undefined;
    const env = o.request?.request?.body || task ? await o.secretEnv(task) : undefined;
    // The rule's headers go with the request: the rule chosen, else the one a crawl would give the page.
    const rule = o.rule ?? (task ? (chooseRule(task, url, url, null).rule?.name ?? null) : null);
    const loaded = await source.load(url, task, {
      refetch: o.refetch,
      signal: o.signal,
      browser,
      request: o.request?.request ?? null,
      rule,
      ...(env ? { env } : {}),
    });
    return { loaded, sitemap: null };
  } catch (err) {
    // XML or text where a page was expected: a sitemap under a name that does not say so.
    if (!(err instanceof NotHtmlError) || !SITEMAP_TYPES.test(err.contentType ?? '')) throw err;
    return { loaded: null, sitemap: await source.loadSitemap(url, task, false, o.signal) };
  }
}

/** What the preview's state says of the page (or sitemap) on show. */
export function pageState(loaded: LoadedPage | null, sitemap: LoadedSitemap | null): PreviewState['page'] {
  const m = loaded?.meta ?? sitemap?.meta;
  if (!m) return null;
  return {
    url: m.url,
    ...(m.request ? { method: m.request.method, ...(m.request.body ? { body: bodyLabel(m.request.body) } : {}) } : {}),
    ...(m.key ? { key: m.key } : {}),
    ...(loaded?.page.json ? { json: true } : {}),
    finalUrl: m.finalUrl,
    status: m.status,
    contentType: m.contentType,
    bytes: m.bytes,
    fetchedAt: m.fetchedAt,
    fromCache: loaded?.fromCache ?? false,
    ...(loaded?.meta.actions ? { actions: loaded.meta.actions } : {}),
    ...(loaded?.meta.warnings?.length ? { warnings: loaded.meta.warnings } : {}),
  };
}
