import type { RawAction } from './actions';
import type { BrowserSpec, PageValue } from './model';
import type { RawRequestParts } from './requests';

// A task file as the YAML parses it, once the JSON schema has checked its shape (crawl-task.schema.json): what
// the parse's semantic checks walk and turn into a CrawlTask (model.ts).

export type RawField =
  | string
  | {
      selector?: string;
      page?: PageValue;
      jsonld?: string;
      microdata?: string;
      opengraph?: string;
      attr?: string;
      html?: boolean;
      all?: boolean;
      trim?: boolean;
      regex?: string;
      url?: boolean;
      required?: boolean;
    };
export interface RawItem {
  type: string;
  scope?: string;
  key?: string[];
  fields: Record<string, RawField>;
}
export interface RawFollow extends RawRequestParts {
  selector?: string;
  attr?: string;
  form?: string;
  values?: Record<string, RawField>;
  to?: string;
  priority?: number;
}
export interface RawRule {
  name: string;
  match?: string[];
  follow?: RawFollow[];
  items?: RawItem[];
  browser?: RawBrowser;
  request?: { headers?: Record<string, string> };
  format?: 'json' | 'html';
}
export type RawBrowser =
  | boolean
  | {
      waitFor?: string | { selector: string };
      block?: BrowserSpec['block'][number][];
      timeout?: string | number;
      screenshot?: BrowserSpec['screenshot'];
      actions?: RawAction[];
    };
export type RawStart =
  | string
  | (RawRequestParts & {
      url?: string;
      sitemap?: string;
      rule?: string;
      priority?: number;
      since?: string;
      follow?: string[];
      alternates?: boolean;
    });
/** A task file's content as an object (what the YAML parses to): the library's `runCrawl({ name, start, rules })`. */
export type TaskDefinition = RawTask;

export interface RawTask {
  name: string;
  start: RawStart[];
  scope?: { allow?: string[]; deny?: string[]; maxPages?: number; maxDepth?: number; allowPrivate?: boolean };
  request?: {
    timeout?: string | number;
    userAgent?: string;
    headers?: Record<string, string>;
    maxBytes?: string | number;
    maxRedirects?: number;
    robots?: boolean;
    retries?: { attempts?: number; backoff?: 'exponential' | 'fixed'; delay?: string | number };
    conditional?: boolean;
  };
  politeness?: {
    rateLimit?: { max: number; per: string | number };
    perHost?: { concurrency?: number; delay?: string | number };
  };
  session?: { pool?: number; maxPages?: number; retireOn?: { status?: number[]; selector?: string } };
  login?: {
    url: string;
    browser?: boolean;
    form?: { selector?: string; submit?: string; fields: Record<string, string> };
    post?: { fields?: Record<string, string>; json?: Record<string, unknown> };
    check?: { selector?: string };
  };
  proxy?: { urls: string[]; rotate?: 'per-session' | 'per-request' };
  canonical?: { sortQuery?: boolean; stripTrailingSlash?: boolean; dropParams?: string[] };
  notify?: RawNotify;
  store?: {
    url?: string;
    onConflict?: 'update' | 'ignore';
    batchSize?: number;
    flushInterval?: string | number;
    history?: { keep?: string | number };
  };
  schedule?: { cron?: string; every?: string | number; timezone?: string };
  browser?: RawBrowser;
  rules: RawRule[];
}

export interface RawNotify {
  webhook: string;
  when?: { changed?: string; moved?: string; percent?: number }[];
}
