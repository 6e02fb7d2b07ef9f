// The normalised task: every default applied, every pattern compiled. Produced only by parseTask(),
// so the rest of the engine never re-checks what the validator already guarantees.
import type { HistoryRetention } from '../history/diff';
import type { NotifySpec } from '../history/notify';
import type { FieldRegex } from './fieldRegex';
import type { Since } from '../sitemap/lastmod';
import type { JsonLdPath } from '../extract/jsonld';
import type { MicrodataPath } from '../extract/microdata';

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
  /**
   * The field's value is read from the page's JSON-LD (`jsonld: Product.offers.price`), not an element's: as with
   * `page`, `selector`, `attr` and `html` are then absent; `all`, `regex` and `url` apply. Absent: not a JSON-LD field.
   */
  readonly jsonld?: JsonLdPath | null;
  /** The same from the page's microdata (`microdata: Product.offers.price`: itemtype, then itemprops). */
  readonly microdata?: MicrodataPath | null;
  /** The same from the page's `<meta property>` tags (`opengraph: og:title`), the key in lower case. */
  readonly opengraph?: string | null;
  /**
   * A CSS selector, or a JSONPath (it starts with `$`: see isJsonPath) into a JSON response. Null: the scope
   * element (or JSON value) itself.
   */
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
  /** A CSS selector or a JSONPath (see FieldSpec.selector); null: one item per page. */
  readonly scope: string | null;
  /** Field names that identify an item; empty means "hash of the whole item". */
  readonly key: readonly string[];
  readonly fields: readonly FieldSpec[];
}

/** Where a selector string is a JSONPath (RFC 9535) into a JSON response rather than a CSS selector. */
export function isJsonPath(selector: string): boolean {
  return selector.startsWith('$');
}

interface FollowBase {
  readonly to: string | null;
  readonly priority: number | null;
}

/** `selector:` the URLs of links (an attribute of the matched elements, or the strings a JSONPath matches). */
export interface LinkFollow extends FollowBase {
  readonly kind: 'links';
  readonly selector: string;
  readonly attr: string;
}

/** `form:` a request per matching form of the page: its action, method and inputs, with `fields` filled in. */
export interface FormFollow extends FollowBase {
  readonly kind: 'form';
  /** The forms' CSS selector. */
  readonly selector: string;
  /** `url` is empty (the form's action) and `method` null (the form's own) unless the entry sets them. */
  readonly request: RequestTemplate;
}

/** `url:` a request built from a template and values read from the page. */
export interface RequestFollow extends FollowBase {
  readonly kind: 'request';
  readonly request: RequestTemplate;
}

export type FollowSpec = LinkFollow | FormFollow | RequestFollow;

/** What a follow entry is known by in messages and the preview: its selector, or its URL template. */
export function followLabel(f: FollowSpec): string {
  return f.kind === 'request' ? f.request.url : f.kind === 'form' ? `form ${f.selector}` : f.selector;
}

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH';

/** The author's body: its strings are templates (core/request/template.ts), kept as written. */
export type BodyTemplate =
  | { readonly kind: 'form'; readonly fields: Readonly<Record<string, string>> }
  | { readonly kind: 'json'; readonly json: unknown };

/** `pages:` of a request whose URL or body holds `{page}`: the page numbers it counts through. */
export interface PagesSpec {
  readonly from: number;
  readonly step: number;
  /** The last page number; null: until a page yields nothing. */
  readonly max: number | null;
}

/**
 * A request a start entry or a follow entry builds. Strings are templates as written (`{name}` values from the
 * page, `{page}`, `${CRAWL_STUDIO_*}` in bodies), rendered by core/request: a parsed task crosses to the analysis
 * thread and into messages, so it holds no secret (see LoginSpec).
 */
export interface RequestTemplate {
  /** As written; relative to the page in follows; empty in a form follow (the form's action). */
  readonly url: string;
  /** Null: POST with a body, else GET; in a form follow, the form's method. */
  readonly method: HttpMethod | null;
  readonly body: BodyTemplate | null;
  /** Retried like a GET after any retryable failure (a search sent by POST); else see core/request/retry.ts. */
  readonly idempotent: boolean;
  /** The URL or the body holds `{page}`: the request is one of a series (see core/request/series.ts). */
  readonly pages: PagesSpec | null;
  /** `values:` read from the page for the other `{name}`s (follows only); at most one with `all`. */
  readonly values: readonly FieldSpec[];
}

export interface PageRule {
  readonly name: string;
  readonly match: readonly UrlPattern[];
  readonly follow: readonly FollowSpec[];
  readonly items: readonly ItemSpec[];
  /** Render the rule's pages in a browser first; null: fetch them (the task's `browser` already folded in). */
  readonly browser: BrowserSpec | null;
  /** `request.headers` of the rule, over the task's (templates: `${CRAWL_STUDIO_*}` expands in the worker). */
  readonly headers: Readonly<Record<string, string>>;
  /** `format:` how responses are read whatever their Content-Type; null: by Content-Type. */
  readonly format: 'json' | 'html' | null;
  /** The rule reads JSON (`format: json`, or a JSONPath anywhere in it): JSON responses are extracted, not skipped. */
  readonly readsJson: boolean;
}

/** When a rendered page is ready to extract. */
export type BrowserWait =
  | { readonly kind: 'load' | 'domcontentloaded' | 'networkidle' }
  | { readonly kind: 'selector'; readonly selector: string }
  | { readonly kind: 'delay'; readonly ms: number };

/** Resource types a page may not load (Playwright's names). */
export type BlockedResource =
  | 'image'
  | 'font'
  | 'media'
  | 'stylesheet'
  | 'script'
  | 'xhr'
  | 'fetch'
  | 'websocket'
  | 'eventsource'
  | 'manifest'
  | 'texttrack'
  | 'other';

export interface BrowserSpec {
  readonly waitFor: BrowserWait;
  readonly block: readonly BlockedResource[];
  /** Navigation and wait together. */
  readonly timeoutMs: number;
  /** When a screenshot of the rendered page is kept (see worker/browser/screenshots.ts). */
  readonly screenshot: 'never' | 'failure' | 'always';
  /** What the page does once ready, before it is read (actions.ts); run in order within `timeoutMs`. */
  readonly actions: readonly PageAction[];
}

/** What a `wait` action waits for. */
export type WaitTarget =
  | {
      readonly kind: 'selector';
      readonly selector: string;
      readonly state: 'attached' | 'visible' | 'hidden' | 'detached';
    }
  | { readonly kind: 'networkidle' }
  | { readonly kind: 'delay'; readonly ms: number };

interface Timed {
  /** This action's own bound; the render's deadline bounds it too. */
  readonly timeoutMs: number;
}

/** A step of `browser.actions` (actions.ts parses them, worker/browser/actions.ts runs them). */
export type PageAction = Timed &
  (
    | {
        readonly kind: 'scroll';
        /** Counted to tell growth (null: the page's height). */
        readonly selector: string | null;
        /** Stop once `selector` matches this many (null: when the page stops growing). */
        readonly count: number | null;
        readonly max: number;
        readonly idleMs: number;
      }
    | {
        readonly kind: 'click';
        readonly selector: string;
        readonly untilGone: boolean;
        readonly max: number;
        readonly idleMs: number;
        readonly optional: boolean;
      }
    | { readonly kind: 'wait'; readonly for: WaitTarget }
    /** `value` is a template: `${CRAWL_STUDIO_*}` expands in the worker, never in the parsed task. */
    | { readonly kind: 'fill'; readonly selector: string; readonly value: string }
    | { readonly kind: 'select'; readonly selector: string; readonly value: string }
    | { readonly kind: 'press'; readonly selector: string | null; readonly key: string }
    /** A script of the workspace, relative to the task file's folder. */
    | { readonly kind: 'evaluate'; readonly file: string }
  );

export type ActionKind = PageAction['kind'];

/** True when some rule renders pages: only then does a worker need (and start) a browser. */
export function needsBrowser(task: Pick<CrawlTask, 'rules'> & { readonly login?: LoginSpec | null }): boolean {
  return task.rules.some((r) => r.browser !== null) || task.login?.browser === true;
}

export interface UrlPattern {
  /** As written in the task file, for messages. */
  readonly source: string;
  readonly regex: RegExp;
}

export interface StartUrl {
  /** The URL fetched first (for a series, its first page). */
  readonly url: string;
  readonly rule: string;
  readonly priority: number | null;
  /** A method, a body or `{page}`; null: a plain GET of `url`. */
  readonly request: RequestTemplate | null;
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
  /** Input names and values; in a browser login (`browser`), CSS selectors of the inputs to fill and values. */
  readonly fields: Readonly<Record<string, string>>;
  /**
   * The login page is rendered in a browser and its form filled in there (a form a script builds, its CSRF token
   * fetched by the script): `form` logins only. The cookies it gets serve fetched and rendered pages alike.
   */
  readonly browser: boolean;
  /** The element a browser login clicks to submit (null: Enter in the last field filled). */
  readonly submitSelector: string | null;
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
    /** Conditional re-crawl (core/pipeline/revisit.ts): `request.conditional`, else on for a task with a schedule. */
    readonly conditional: boolean;
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
    /** How much item history to keep (store.history.keep). */
    readonly history: HistoryRetention;
  };
  /** Null: the crawl runs once. */
  readonly schedule: {
    readonly cron: string | null;
    readonly everyMs: number | null;
    readonly timezone: string;
  } | null;
  /** Where a finished run's changes are sent (a webhook), and when; null: nowhere. */
  readonly notify: NotifySpec | null;
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
