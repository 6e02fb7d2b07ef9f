// The normalised task: every default applied, every pattern compiled. Produced only by parseTask(),
// so the rest of the engine never re-checks what the validator already guarantees.

import type { FieldRegex } from './fieldRegex';
import type { Since } from '../sitemap/lastmod';

/**
 * What a field can take from the page itself instead of its elements (`page: url`), as Scrapy items carry
 * `response.url`: the URL as queued, where redirects ended, the HTTP status, the fetch time, the rule's name.
 */
export const PAGE_VALUES = ['url', 'finalUrl', 'status', 'fetchedAt', 'rule'] as const;
export type PageValue = (typeof PAGE_VALUES)[number];

export interface FieldSpec {
  readonly name: string;
  /**
   * The field's value is this fact about the page, not an element's: `selector`, `attr`, `html` and `all` are then
   * null or false (parseTask refuses them beside `page`), while `regex` and `url` still apply to the value.
   */
  readonly page: PageValue | null;
  /** Empty selector: the scope element itself. */
  readonly selector: string | null;
  readonly attr: string | null;
  readonly html: boolean;
  readonly all: boolean;
  readonly trim: boolean;
  /** Run with execFieldRegex (RE2: linear time); plain data, so a task crosses to the analysis thread. */
  readonly regex: FieldRegex | null;
  readonly url: boolean;
  readonly required: boolean;
}

export interface ItemSpec {
  readonly type: string;
  readonly scope: string | null;
  /** Field names that identify an item; empty means "hash of the whole item". */
  readonly key: readonly string[];
  readonly fields: readonly FieldSpec[];
}

export interface FollowSpec {
  readonly selector: string;
  readonly attr: string;
  readonly to: string | null;
  readonly priority: number | null;
}

export interface PageRule {
  readonly name: string;
  readonly match: readonly UrlPattern[];
  readonly follow: readonly FollowSpec[];
  readonly items: readonly ItemSpec[];
  /** Render the rule's pages in a browser first; null: fetch them (the task's `browser` already folded in). */
  readonly browser: BrowserSpec | null;
}

/** When a rendered page is ready to extract. */
export type BrowserWait =
  | { readonly kind: 'load' | 'domcontentloaded' | 'networkidle' }
  | { readonly kind: 'selector'; readonly selector: string }
  | { readonly kind: 'delay'; readonly ms: number };

/** Resource types a page may not load (Playwright's names). */
export type BlockedResource = 'image' | 'font' | 'media' | 'stylesheet' | 'script' | 'xhr' | 'fetch' | 'websocket' | 'eventsource' | 'manifest' | 'texttrack' | 'other';

export interface BrowserSpec {
  readonly waitFor: BrowserWait;
  readonly block: readonly BlockedResource[];
  /** Navigation and wait together. */
  readonly timeoutMs: number;
}

/** True when some rule renders pages: only then does a worker need (and start) a browser. */
export function needsBrowser(task: Pick<CrawlTask, 'rules'>): boolean {
  return task.rules.some((r) => r.browser !== null);
}

export interface UrlPattern {
  /** As written in the task file, for messages. */
  readonly source: string;
  readonly regex: RegExp;
}

export interface StartUrl {
  readonly url: string;
  readonly rule: string;
  readonly priority: number | null;
}

/** A `start` entry that names a sitemap (or a robots.txt, for the sitemaps its `Sitemap:` lines name). */
export interface SitemapStart {
  readonly url: string;
  /** The URL is a robots.txt: its `Sitemap:` lines are the sitemaps. */
  readonly robots: boolean;
  /** The rule that handles the pages it lists; null: each is routed by `match`, as links are. */
  readonly rule: string | null;
  readonly priority: number | null;
  /** Pages (and sitemaps of an index) last modified before this are not crawled; null: all are. */
  readonly since: Since | null;
  /** Which sitemaps of an index are read; empty: all of them. */
  readonly follow: readonly UrlPattern[];
  /** Also crawl each page's hreflang alternates. */
  readonly alternates: boolean;
}

/** `session:`: a pool of cookie sessions kept in Redis (worker/sessions.ts). */
export interface SessionSpec {
  readonly pool: number;
  /** Pages a session fetches before it is replaced; null: no limit. */
  readonly maxPages: number | null;
  readonly retireOnStatus: readonly number[];
  readonly retireOnSelector: string | null;
}

/**
 * `login:`. Values are templates (`${CRAWL_STUDIO_USER}`), expanded by the worker as it logs in: a parsed task
 * crosses to the analysis thread and into messages, and must not carry a secret there.
 */
export interface LoginSpec {
  readonly url: string;
  readonly kind: 'form' | 'post';
  /** The form to fill in (form logins); null: the one with a password field, else the first. */
  readonly formSelector: string | null;
  readonly fields: Readonly<Record<string, string>>;
  /** A JSON body (post logins); its strings are templates too. */
  readonly json: unknown;
  readonly checkSelector: string | null;
}

/** `proxy:`: URL templates, expanded by the worker (see LoginSpec for why not here). */
export interface ProxySpec {
  readonly urls: readonly string[];
  readonly rotate: 'per-session' | 'per-request';
}

export type BackoffKind = 'exponential' | 'fixed';

export interface CanonicalOptions {
  readonly sortQuery: boolean;
  readonly stripTrailingSlash: boolean;
  readonly dropParams: readonly RegExp[];
}

export interface CrawlTask {
  readonly name: string;
  /** Absolute path of the file it came from, or a label such as "<untitled>". */
  readonly file: string;
  readonly start: readonly StartUrl[];
  /** Sitemaps the crawl starts from, besides (or instead of) start URLs; their index is their id on jobs. */
  readonly sitemaps: readonly SitemapStart[];
  readonly scope: {
    /** Empty: any URL on one of `startHosts`. */
    readonly allow: readonly UrlPattern[];
    readonly deny: readonly UrlPattern[];
    readonly startHosts: readonly string[];
    readonly maxPages: number | null;
    readonly maxDepth: number | null;
    readonly allowPrivate: boolean;
  };
  readonly request: {
    readonly timeoutMs: number;
    readonly userAgent: string;
    readonly headers: Readonly<Record<string, string>>;
    readonly maxBytes: number;
    readonly maxRedirects: number;
    readonly robots: boolean;
    readonly retries: { readonly attempts: number; readonly backoff: BackoffKind; readonly delayMs: number };
  };
  readonly politeness: {
    readonly rateLimit: { readonly max: number; readonly perMs: number } | null;
    readonly perHost: { readonly concurrency: number; readonly delayMs: number };
  };
  /** Null: no sessions (no cookies kept), unless `login` asks for them. */
  readonly session: SessionSpec | null;
  readonly login: LoginSpec | null;
  readonly proxy: ProxySpec | null;
  readonly canonical: CanonicalOptions;
  readonly store: {
    /** As written (after ${VAR} expansion); null means the default SQLite file next to the task file. */
    readonly url: string | null;
    readonly onConflict: 'update' | 'ignore';
    readonly batchSize: number;
    readonly flushMs: number;
  };
  /** Null: the crawl runs once. */
  readonly schedule: { readonly cron: string | null; readonly everyMs: number | null; readonly timezone: string } | null;
  readonly rules: readonly PageRule[];
}

export const DEFAULT_USER_AGENT = 'CrawlStudio/0.1 (+https://github.com/crawl-studio/crawl-studio)';

export const DEFAULTS = {
  timeoutMs: 15_000,
  maxBytes: 10 * 1024 * 1024,
  maxRedirects: 5,
  robots: true,
  attempts: 3,
  backoff: 'exponential' as BackoffKind,
  retryDelayMs: 1_000,
  perHostConcurrency: 4,
  perHostDelayMs: 0,
  sortQuery: true,
  stripTrailingSlash: false,
  onConflict: 'update' as 'update' | 'ignore',
  batchSize: 500,
  flushMs: 200,
  /** Crawlee's blockedStatusCodes. */
  retireOnStatus: [401, 403, 429] as readonly number[],
  browserBlock: ['image', 'font', 'media'] as readonly BlockedResource[],
} as const;
