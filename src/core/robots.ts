import robotsParser from 'robots-parser';

// robots.txt rules for one origin. Per RFC 9309: a missing file (4xx) allows everything; an unreachable one
// (5xx, network error) disallows everything until it can be read. The parsed form is cheap to rebuild, so the
// cache (Redis) keeps the raw text plus how it was obtained.

export interface RobotsSource {
  /** 'ok': text is the file; 'missing': 4xx, allow all; 'unreachable': 5xx or network error, disallow all. */
  readonly state: 'ok' | 'missing' | 'unreachable';
  readonly text: string;
}

export interface RobotsRules {
  isAllowed(url: string): boolean;
  /** Crawl-delay in ms for our agent, if the file sets one. */
  readonly crawlDelayMs: number | null;
  /** The file's `Sitemap:` lines, as written (absolute URLs, for any host). */
  readonly sitemaps: readonly string[];
}

/** robots.txt files larger than this are cut (RFC 9309 asks crawlers to parse at least 500 KiB). */
export const MAX_ROBOTS_BYTES = 512 * 1024;

export function robotsUrl(pageUrl: string): string {
  return new URL('/robots.txt', pageUrl).href;
}

export function compileRobots(origin: string, source: RobotsSource, userAgent: string): RobotsRules {
  if (source.state === 'missing') return { isAllowed: () => true, crawlDelayMs: null, sitemaps: [] };
  if (source.state === 'unreachable') return { isAllowed: () => false, crawlDelayMs: null, sitemaps: [] };
  const robot = robotsParser(new URL('/robots.txt', origin).href, source.text.slice(0, MAX_ROBOTS_BYTES));
  const agent = userAgentToken(userAgent);
  const delay = robot.getCrawlDelay(agent);
  return {
    // undefined means "not this origin": treat as allowed, the caller only asks for its own origin.
    isAllowed: (url) => robot.isAllowed(url, agent) !== false,
    crawlDelayMs: typeof delay === 'number' && delay > 0 ? Math.min(delay, 60) * 1000 : null,
    sitemaps: robot.getSitemaps(),
  };
}

/** "CrawlStudio/0.1 (+https://…)" -> "CrawlStudio": robots.txt groups name the product token only. */
function userAgentToken(userAgent: string): string {
  return userAgent.split(/[\s/]/)[0] || userAgent;
}
