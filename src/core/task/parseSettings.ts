import { DEFAULT_USER_AGENT, DEFAULTS, type CrawlTask, type SitemapStart, type StartUrl } from './model';
import { globToRegExp } from '../url/patterns';
import { parseSize } from '../units';
import { headerValueProblem } from './headers';
import type { Checker } from './checker';
import { headersOf } from './parseAccess';
import type { RawTask } from './rawTask';

// A task's crawl-wide settings: `scope`, `request` (timeouts, user agent, headers, sizes, retries, conditional
// re-crawl), `politeness` (rate limit, per-host concurrency and delay) and `canonical` (how URLs are normalised).

export function buildScope(
  raw: RawTask,
  start: readonly StartUrl[],
  sitemaps: readonly SitemapStart[],
  c: Checker,
): CrawlTask['scope'] {
  const sc = raw.scope ?? {};
  return {
    allow: c.patterns(['scope', 'allow'], sc.allow),
    deny: c.patterns(['scope', 'deny'], sc.deny),
    // A sitemap's host is a start host: a task that starts from sitemaps alone crawls the site they list.
    startHosts: [...new Set([...start, ...sitemaps].map((s) => new URL(s.url).host))],
    maxPages: sc.maxPages ?? null,
    maxDepth: sc.maxDepth ?? null,
    allowPrivate: sc.allowPrivate ?? false,
  };
}

/** `request.timeout`: also the default of a rendered page's timeout, so read before the rules. */
export function requestTimeout(raw: RawTask, c: Checker): number {
  return raw.request?.timeout !== undefined
    ? c.duration(['request', 'timeout'], raw.request.timeout)
    : DEFAULTS.timeoutMs;
}

export function buildRequestSettings(raw: RawTask, timeoutMs: number, c: Checker): CrawlTask['request'] {
  const req = raw.request ?? {};
  const agentProblem = req.userAgent !== undefined ? headerValueProblem(req.userAgent) : null;
  if (agentProblem !== null) c.diags.atPath(['request', 'userAgent'], agentProblem);
  return {
    timeoutMs,
    userAgent: req.userAgent ?? DEFAULT_USER_AGENT,
    headers: headersOf(req.headers, ['request', 'headers'], c),
    maxBytes: req.maxBytes !== undefined ? parseSize(req.maxBytes) : DEFAULTS.maxBytes,
    maxRedirects: req.maxRedirects ?? DEFAULTS.maxRedirects,
    robots: req.robots ?? DEFAULTS.robots,
    retries: {
      attempts: req.retries?.attempts ?? DEFAULTS.attempts,
      backoff: req.retries?.backoff ?? DEFAULTS.backoff,
      delayMs:
        req.retries?.delay !== undefined
          ? c.duration(['request', 'retries', 'delay'], req.retries.delay)
          : DEFAULTS.retryDelayMs,
    },
    // A scheduled task is re-crawled by definition; one run by hand asks for it.
    conditional: req.conditional ?? raw.schedule !== undefined,
  };
}

export function buildPoliteness(raw: RawTask, c: Checker): CrawlTask['politeness'] {
  const pol = raw.politeness ?? {};
  return {
    rateLimit: pol.rateLimit
      ? {
          max: pol.rateLimit.max,
          perMs: Math.max(1, c.duration(['politeness', 'rateLimit', 'per'], pol.rateLimit.per)),
        }
      : null,
    perHost: {
      concurrency: pol.perHost?.concurrency ?? DEFAULTS.perHostConcurrency,
      delayMs:
        pol.perHost?.delay !== undefined
          ? c.duration(['politeness', 'perHost', 'delay'], pol.perHost.delay)
          : DEFAULTS.perHostDelayMs,
    },
  };
}

export function buildCanonical(raw: RawTask): CrawlTask['canonical'] {
  const can = raw.canonical ?? {};
  return {
    sortQuery: can.sortQuery ?? DEFAULTS.sortQuery,
    stripTrailingSlash: can.stripTrailingSlash ?? DEFAULTS.stripTrailingSlash,
    dropParams: (can.dropParams ?? []).map((g) => globToRegExp(g)),
  };
}
