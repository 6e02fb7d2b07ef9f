// Messages between the preview webview and the extension, and the shapes of what the webview shows. Shared by
// both sides (the webview bundle imports the types and the labels only). Everything the webview sends is
// untrusted input: parseWebviewMessage checks type and fields before the extension acts on it.

import type { SelectorSuggestion } from '../extract/suggest';
import type { StructuredEntry, StructuredSource } from '../extract/structuredData';

export type { StructuredEntry, StructuredSource };

export type CellState = 'ok' | 'empty' | 'missing';

export interface CellView {
  readonly value: string | string[] | null;
  readonly state: CellState;
}

export interface ItemTableView {
  readonly type: string;
  readonly scope: string | null;
  readonly columns: readonly string[];
  readonly rows: readonly { readonly key: string; readonly cells: readonly CellView[] }[];
  /** Rows before the display limit cut the table. */
  readonly total: number;
}

export type LinkReason =
  | 'invalid'
  | 'scheme'
  | 'credentials'
  | 'too-long'
  | 'offsite'
  | 'pattern'
  | 'denied'
  | 'private'
  | 'depth'
  | 'no-rule'
  | 'repeat'
  | 'robots';

/** How each reason a link is dropped reads in the preview. */
export const LINK_REASONS: Readonly<Record<LinkReason, string>> = {
  invalid: 'not a valid URL',
  scheme: 'not http(s)',
  credentials: 'has credentials',
  'too-long': 'URL too long',
  offsite: 'off-site',
  pattern: 'not in scope.allow',
  denied: 'denied by scope.deny',
  private: 'private network',
  depth: 'deeper than scope.maxDepth',
  'no-rule': 'no rule handles it',
  repeat: 'duplicate on this page',
  robots: 'disallowed by robots.txt',
};

/** A kept link; a request that is not a plain GET shows its method and body, and any with a `key` opens as itself. */
export interface LinkView {
  readonly url: string;
  readonly rule: string;
  readonly method?: string;
  /** Variables as `${NAME}`, never their values. */
  readonly body?: string;
  /** Opens this request (a POST, a page of a series) rather than a GET of `url`: sent back with openPage. */
  readonly key?: string;
}

export interface FollowView {
  /** The follow's index in its rule; -1 for the next page of the page's own series. */
  readonly index: number;
  readonly selector: string;
  readonly to: string | null;
  readonly kept: readonly LinkView[];
  readonly dropped: readonly {
    readonly url: string;
    readonly reason: LinkReason;
    readonly method?: string;
    readonly detail?: string;
  }[];
  readonly keptTotal: number;
  readonly droppedTotal: number;
}

export interface DiagnosticView {
  readonly severity: 'error' | 'warning';
  readonly message: string;
  readonly path: string;
  readonly line: number;
  readonly column: number;
}

export interface HighlightView {
  readonly label: string;
  readonly selector: string | null;
  readonly indices: readonly number[];
  readonly count: number;
  readonly scopes: { readonly matched: number; readonly total: number } | null;
  readonly error: string | null;
}

export interface PageView {
  readonly url: string;
  /** The request's method and body when it is not a plain GET (variables by name). */
  readonly method?: string;
  readonly body?: string;
  /** The page is JSON, shown as a JSON view. */
  readonly json?: boolean;
  /** The request's key when it is not a plain GET (the pages list shows it by this). */
  readonly key?: string;
  readonly finalUrl: string;
  readonly status: number;
  readonly contentType: string | null;
  readonly bytes: number;
  readonly fetchedAt: string;
  readonly fromCache: boolean;
  /** The rule's `browser.actions` as they ran on the rendered page, one line a step (what, how many, how long). */
  readonly actions?: readonly string[];
  /** What the fetch saw the page get wrong (a charset that garbles it, cards after load): the banner shows them. */
  readonly warnings?: readonly string[];
}

export interface PageChoice {
  readonly url: string;
  /** A start entry that sends a body or counts pages: opened by this key (see LinkView.key). */
  readonly key?: string;
  readonly kind: 'start' | 'sitemap' | 'cached';
  readonly label: string;
}

/** A sitemap (or a robots.txt's Sitemap: lines) as the preview shows it: each entry and where a crawl sends it. */
export interface SitemapView {
  readonly url: string;
  readonly format: 'urlset' | 'sitemapindex' | 'text' | 'robots';
  /** Which settings route it: the task's `sitemap:` entry, or none. */
  readonly settings: string;
  readonly entries: readonly {
    readonly url: string;
    /** A page to crawl, or a sitemap of an index (read next). */
    readonly kind: 'page' | 'sitemap';
    readonly lastmod: string | null;
    /** The page's rule; null for a sitemap or a dropped entry. */
    readonly rule: string | null;
    /** Why it is not crawled (a drop reason: offsite, no-rule, since, follow…), or null. */
    readonly dropped: string | null;
    /** hreflang alternates listed with it. */
    readonly alternates: number;
  }[];
  /** Entries read (rows are cut at a limit, counts are not). */
  readonly total: number;
  /** Pages and sitemaps a crawl would enqueue. */
  readonly kept: number;
  readonly dropped: Readonly<Record<string, number>>;
  /** The preview stopped reading at its limit. */
  readonly truncated: boolean;
}

export interface AnalysisView {
  /** The file has errors: the items and links are from its last valid version. */
  readonly stale: boolean;
  readonly diagnostics: readonly DiagnosticView[];
  readonly rule: {
    readonly name: string | null;
    readonly auto: boolean;
    readonly reason: string;
    readonly names: readonly string[];
    /** No rule applies to the page (no start URL, no `match`, none chosen): the first rule is shown anyway. */
    readonly fallback: boolean;
  };
  readonly items: readonly ItemTableView[];
  readonly problems: readonly string[];
  readonly links: readonly FollowView[];
  /** robots.txt of some link origins is still being fetched: their links show as kept for now. */
  readonly robotsPending: boolean;
  readonly highlight: HighlightView | null;
  readonly timings: {
    readonly parseMs: number;
    readonly analyseMs: number;
    readonly highlightMs: number;
    readonly totalMs: number;
  };
}

export interface PreviewState {
  readonly file: string;
  /** The task file's URI, and the rule chosen (null: auto): what the webview keeps to come back after a reload. */
  readonly restore: { readonly uri: string; readonly rule: string | null };
  readonly page: PageView | null;
  /** Why there is no page to show (fetch failed, not HTML, too large…), or null. */
  readonly pageError: string | null;
  /** A fetch in progress ("Fetching http://…"), or null. */
  readonly loading: string | null;
  readonly choices: readonly PageChoice[];
  readonly images: boolean;
  /** The page is rendered in a browser (scripts run there) before it is shown, with scripts off, and analysed. */
  readonly browser: boolean;
  /** The URL shown is a sitemap (or a robots.txt naming sitemaps): its entries instead of a page. */
  readonly sitemap: SitemapView | null;
  /** How the page was fetched when not plainly: "logged in (session), through proxy socks5://host:1080". */
  readonly access: string | null;
  /** Which page this is for the rule and why, when the Preview lens chose it: "a page of rule detail from the start page's links". */
  readonly pageWhy?: string | null;
  readonly analysis: AnalysisView | null;
  /**
   * The structured data the page carries (JSON-LD, microdata, OpenGraph) as the paths a field reads it by, with
   * their values: the preview's Data tab lists them and adds one as a field (`insertField`). Absent: no page.
   */
  readonly structured?: readonly StructuredEntry[];
}

/** What the picker shows after a click. */
export interface SuggestionView {
  readonly index: number;
  readonly suggestion: SelectorSuggestion;
  /** Where Insert will write, e.g. `book.title` or "at the cursor". */
  readonly target: string;
  /** Paths of the page's structured data whose value the element shows: offered beside the selector. */
  readonly structured?: readonly StructuredEntry[];
}

// ---------------------------------------------------------------------------------------------------------
// Extension -> webview

export type HostMessage =
  | { readonly type: 'state'; readonly seq: number; readonly state: PreviewState }
  /** The inert page for the frame; sent only when the page (or the image setting) changes. */
  | { readonly type: 'frame'; readonly html: string | null; readonly key: string }
  | { readonly type: 'suggestion'; readonly view: SuggestionView | null; readonly error: string | null }
  | { readonly type: 'inserted'; readonly selector: string; readonly target: string };

// ---------------------------------------------------------------------------------------------------------
// Webview -> extension

export type WebviewMessage =
  | { readonly type: 'ready' }
  | { readonly type: 'openPage'; readonly url: string; readonly key?: string }
  | { readonly type: 'refetch' }
  | { readonly type: 'cancelFetch' }
  | { readonly type: 'setRule'; readonly rule: string | null }
  | { readonly type: 'setImages'; readonly allowed: boolean }
  | { readonly type: 'setBrowser'; readonly on: boolean }
  | { readonly type: 'pick'; readonly index: number }
  | { readonly type: 'insert'; readonly selector: string; readonly all: boolean }
  /** A structured-data path from the Data tab, to add as a field (`{ jsonld: Product.offers.price }`). */
  | { readonly type: 'insertField'; readonly source: StructuredSource; readonly path: string }
  | { readonly type: 'copy'; readonly text: string }
  | { readonly type: 'saveFixture' }
  /** The webview applied state `seq`: what it shows, so tests can assert on the screen, not on what was sent. */
  | {
      readonly type: 'rendered';
      readonly seq: number;
      readonly rows: number;
      readonly highlighted: number;
      readonly frame: string;
      readonly data?: number;
    };

const MAX_URL_CHARS = 2048;
const MAX_SELECTOR_CHARS = 1000;
/** Element numbers are array indices; a page with more elements than this is far over the size cap. */
const MAX_INDEX = 10_000_000;

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function onlyKeys(v: Record<string, unknown>, keys: readonly string[]): boolean {
  return Object.keys(v).every((k) => keys.includes(k));
}

function httpUrl(v: unknown): v is string {
  if (typeof v !== 'string' || v.length === 0 || v.length > MAX_URL_CHARS) return false;
  try {
    return /^https?:$/.test(new URL(v).protocol);
  } catch {
    return false;
  }
}

function shortText(v: unknown, max: number): v is string {
  return typeof v === 'string' && v.length > 0 && v.length <= max && !v.includes('\0');
}

/** The message if it is one the webview may send, with exactly the fields it may carry; else null. */
export function parseWebviewMessage(raw: unknown): WebviewMessage | null {
  if (!isRecord(raw) || typeof raw.type !== 'string') return null;
  const m = raw;
  switch (m.type) {
    case 'ready':
    case 'refetch':
    case 'cancelFetch':
    case 'saveFixture':
      return onlyKeys(m, ['type']) ? { type: m.type } : null;
    case 'openPage':
      if (!onlyKeys(m, ['type', 'url', 'key']) || !httpUrl(m.url)) return null;
      if (m.key === undefined) return { type: 'openPage', url: m.url };
      // A key the host issued (a request it listed): it looks it up, so only its shape is checked here.
      return shortText(m.key, MAX_URL_CHARS + 64) ? { type: 'openPage', url: m.url, key: m.key } : null;
    case 'setRule':
      if (!onlyKeys(m, ['type', 'rule'])) return null;
      if (m.rule === null) return { type: 'setRule', rule: null };
      return shortText(m.rule, 64) && /^[A-Za-z_][A-Za-z0-9_-]*$/.test(m.rule)
        ? { type: 'setRule', rule: m.rule }
        : null;
    case 'setImages':
      return onlyKeys(m, ['type', 'allowed']) && typeof m.allowed === 'boolean'
        ? { type: 'setImages', allowed: m.allowed }
        : null;
    case 'setBrowser':
      return onlyKeys(m, ['type', 'on']) && typeof m.on === 'boolean' ? { type: 'setBrowser', on: m.on } : null;
    case 'pick':
      return onlyKeys(m, ['type', 'index']) &&
        Number.isSafeInteger(m.index) &&
        (m.index as number) >= 0 &&
        (m.index as number) < MAX_INDEX
        ? { type: 'pick', index: m.index as number }
        : null;
    case 'insert':
      return onlyKeys(m, ['type', 'selector', 'all']) &&
        shortText(m.selector, MAX_SELECTOR_CHARS) &&
        !/[\r\n]/.test(m.selector) &&
        typeof m.all === 'boolean'
        ? { type: 'insert', selector: m.selector, all: m.all }
        : null;
    case 'insertField':
      return onlyKeys(m, ['type', 'source', 'path']) &&
        (m.source === 'jsonld' || m.source === 'microdata' || m.source === 'opengraph') &&
        shortText(m.path, 500) &&
        /^[A-Za-z_@][A-Za-z0-9_.:@-]*$/.test(m.path)
        ? { type: 'insertField', source: m.source, path: m.path }
        : null;
    case 'rendered': {
      // `data`: the rows of the Data tab (structured data), counted like `rows` for the tests' view of the screen.
      const data =
        m.data === undefined
          ? undefined
          : Number.isSafeInteger(m.data) && (m.data as number) >= 0
            ? (m.data as number)
            : null;
      return onlyKeys(m, ['type', 'seq', 'rows', 'highlighted', 'frame', 'data']) &&
        [m.seq, m.rows, m.highlighted].every((n) => Number.isSafeInteger(n) && (n as number) >= 0) &&
        typeof m.frame === 'string' &&
        m.frame.length <= 64 &&
        data !== null
        ? {
            type: 'rendered',
            seq: m.seq as number,
            rows: m.rows as number,
            highlighted: m.highlighted as number,
            frame: m.frame,
            ...(data !== undefined ? { data } : {}),
          }
        : null;
    }
    case 'copy':
      return onlyKeys(m, ['type', 'text']) && shortText(m.text, MAX_SELECTOR_CHARS)
        ? { type: 'copy', text: m.text }
        : null;
    default:
      return null;
  }
}
