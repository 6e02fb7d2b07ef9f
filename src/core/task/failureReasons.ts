// Every reason a page can be recorded as failed or skipped for, with what it means and what to do: the one list the
// code's failure groups are checked against (worker/fetcher.ts, worker/browser/render.ts, worker/pageFinish.ts) and
// docs/failures.md is written from (test/unit/failureReasons.test.ts compares the two).

export interface ReasonHelp {
  /** What happened to the page. */
  readonly means: string;
  /** What a person can do about it. */
  readonly todo: string;
}

/**
 * A failed page's reason (the run's `failed:<reason>` counters, `crawl-studio failures --reason`, the dashboard's
 * groups). `http-NNN` stands for each status, `http-404`, `http-503`…
 */
export const FAILURE_REASONS = {
  'http-NNN': {
    means:
      'The server answered with this status (4xx, 5xx). 408, 425, 429, 500, 502-504 and 520-524 were retried first (a 429 or 503 waits out its Retry-After); other statuses are final at once.',
    todo: 'A 404/410: a dead link, often a follow selector picking the wrong links. A 403 or 429 on many pages: slow down (`politeness`), use `session`, or check you may crawl the site. A 5xx: the site is struggling; retry later with `crawl-studio retry --reason http-5xx`.',
  },
  timeout: {
    means:
      'No complete answer within `request.timeout` (a rendered page: the navigation and `waitFor` within `browser.timeout`). Retried.',
    todo: 'Raise `request.timeout` (or `browser.timeout`); lower concurrency if the site slows under load; for a rendered page, wait for something that comes (`waitFor: { selector: … }`).',
  },
  network: {
    means: 'The connection failed or was cut (refused, reset, TLS error). Retried.',
    todo: 'Check the host is reachable from the workers; many at once often means the site is refusing connections: slow down.',
  },
  dns: {
    means: 'The host name does not resolve (ENOTFOUND; EAI_AGAIN is retried).',
    todo: "Check the URL's host name and the workers' DNS.",
  },
  'too-large': {
    means: 'The body (after decompression) is over `request.maxBytes`, or a sitemap over its size limit. Not retried.',
    todo: 'Raise `request.maxBytes` if the page really is that big; otherwise keep the rule off such URLs.',
  },
  redirects: {
    means: 'More redirects than `request.maxRedirects`: usually a redirect loop (a cookie or login the site wants).',
    todo: 'Open the URL in a browser; a loop through a login page needs `login`/`session`.',
  },
  'invalid-url': {
    means: 'A redirect to something that is not a valid URL.',
    todo: "Nothing on your side: the site's redirect is broken.",
  },
  blocked: {
    means:
      'Refused before any request: a private or loopback address (the start hosts excepted), or a redirect to a non-http URL.',
    todo: 'To crawl an intranet host, set `scope.allowPrivate`.',
  },
  sitemap: {
    means: 'A sitemap that is not one (not XML or a text list), or whose gzip is broken.',
    todo: 'Check the sitemap URL in `start`; open it to see what the site serves.',
  },
  proxy: {
    means:
      "The proxy could not be reached or could not connect to the site. Retried, through the task's other proxies first.",
    todo: 'Check `proxy.urls` and that the proxy is up.',
  },
  'proxy-auth': {
    means: 'The proxy answered 407: its credentials are wrong. A setup error: the page fails at once, not retried.',
    todo: 'Fix the credentials in `proxy.urls` (the `${VARS}` it names).',
  },
  login: {
    means:
      "The session's `login` failed (its request failed, or its `check` did not pass), so the page was not fetched.",
    todo: 'Run `crawl-studio validate` and check the login variables; the first message says what the login page answered.',
  },
  request: {
    means: 'The request cannot be sent as the task writes it: a `${VAR}` its headers or body name is not set.',
    todo: 'Set the variable in the environment of the run (`validate` warns about unset ones).',
  },
  session: {
    means: 'The page answered like a block (`session.retireOn`), and no session was left to try it with.',
    todo: 'Slow down, use more sessions or proxies; check that `retireOn` does not match ordinary pages.',
  },
  failover: {
    means: "Redis failed over while a sitemap's entries were being queued; the sitemap is read again.",
    todo: 'Nothing, unless it repeats: then look at the Redis deployment.',
  },
  action: {
    means:
      "A step of the rule's `browser.actions` failed: its element never came, it timed out, or its script threw. The message names the step.",
    todo: "Open the page in the designer's preview, which runs the actions and lists each step.",
  },
  'browser-crash': {
    means: 'The browser crashed while rendering this page. Retried in a new browser.',
    todo: 'Many of them: the pages may need more memory (fewer concurrent renders, `--concurrency`).',
  },
  'browser-hung': {
    means:
      'This page stopped the browser answering (a script that never yields, e.g. a busy loop) past its timeout; the browser was killed and replaced.',
    todo: "Block the page's scripts (`browser.block: [script]`), or fetch the rule's pages without a browser.",
  },
  'browser-closed': {
    means:
      'The browser closed under this page too many times in a row (another page hung or crashed it, or it went away). Pages closed with a browser go back without spending an attempt, a bounded number of times.',
    todo: 'Look at the `browser-hung` and `browser-crash` pages of the run: they are the cause.',
  },
  parse: {
    means:
      'Parsing or extracting the page threw, or the page nests elements too deeply to extract (more than 20,000 levels).',
    todo: 'Save the page as a fixture (`crawl-studio fixture save`) and run `crawl-studio test` to see the error.',
  },
  'parse-budget': {
    means: 'Extracting the page took longer than its time budget (a huge page, or a selector that is very slow on it).',
    todo: 'Narrow the selectors, or keep the rule off such pages.',
  },
  'parse-memory': {
    means: 'Extracting the page ran the analysis thread out of memory.',
    todo: 'Lower `request.maxBytes`, or keep the rule off such pages.',
  },
  stalled: {
    means: "The page's worker died or stopped answering while it held the page, too many times (BullMQ's stall limit).",
    todo: "Look at the workers' logs around the page: a worker killed (memory, a crash) on this page each time.",
  },
  error: {
    means: 'A failure of no known kind.',
    todo: 'Read the message (`crawl-studio failures --reason error`); a bug report with it is welcome.',
  },
} as const satisfies Readonly<Record<string, ReasonHelp>>;

export type FailureReason = keyof typeof FAILURE_REASONS;

/**
 * A skipped page's reason (the run's `skipped:<reason>` counters): not a failure, the page was not to be crawled.
 * `navigated-REASON` stands for each reason a link can be refused for (`navigated-offsite`, `navigated-robots-txt`…).
 */
export const SKIP_REASONS = {
  robots: {
    means: "robots.txt disallows the page for the task's user agent.",
    todo: 'Nothing: the site asks not to. `request.robots: false` only where you may ignore it.',
  },
  limit: {
    means: 'The run reached `scope.maxPages`: the page was found but not queued.',
    todo: 'Raise `scope.maxPages` if you want more.',
  },
  'no-rule': {
    means: "The page's rule is no longer in the task file (it changed while the run went on).",
    todo: 'Run again, or put the rule back.',
  },
  'no-sitemap': {
    means: "The sitemap's entry is no longer in the task file's `start` (it changed while the run went on).",
    todo: 'Run again.',
  },
  'navigated-REASON': {
    means:
      'A rendered page went somewhere by itself (a script, a meta refresh, a redirect) that the task does not crawl: out of scope, against robots.txt, not http(s). It is not read as the page asked for.',
    todo: 'If the place is fine to crawl, widen `scope`; otherwise nothing.',
  },
} as const satisfies Readonly<Record<string, ReasonHelp>>;

/** The row of FAILURE_REASONS a recorded reason falls under (`http-404` → `http-NNN`); null for none. */
export function failureReasonRow(reason: string): FailureReason | null {
  if (/^http-\d{3}$/.test(reason)) return 'http-NNN';
  return Object.hasOwn(FAILURE_REASONS, reason) ? (reason as FailureReason) : null;
}
