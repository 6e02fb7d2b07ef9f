import { CONTENT_TYPES, expandBody } from '../core/request/body';
import { isJobRequest, type JobRequest } from '../core/request/build';
import type { CrawlTask, PageRule } from '../core/task/model';
import { headerValueProblem } from '../core/task/headers';
import { expandValue, variablesOf } from '../core/task/secrets';
import { FetchFailure, type FetchOptions } from './fetcher';

// How a worker sends a page's request: its rule's headers over the task's, its job's method and body, the
// `${CRAWL_STUDIO_*}` variables of both filled in here, from this process's environment, at the moment of sending
// (they never reach Redis, logs or messages: a missing one is named, never a value). A task without rule headers
// or requests never comes past `forRule`'s first line: the page is fetched with the task's options, as always.

type Env = Readonly<Record<string, string | undefined>>;

/** Headers with their variables filled in; the names of those that are not set. */
export function expandHeaders(
  headers: Readonly<Record<string, string>>,
  env: Env,
): { headers: Record<string, string>; missing: string[]; invalid: string[] } {
  const out: Record<string, string> = {};
  const missing: string[] = [];
  const invalid: string[] = [];
  for (const [k, v] of Object.entries(headers)) {
    if (!v.includes('${')) {
      out[k] = v;
      continue;
    }
    const e = expandValue(v, env);
    missing.push(...e.missing);
    // A variable's value is checked as the file's text was (core/task/headers.ts), naming the variable, never its value.
    // Such a header is left out (never sent), and the rule's pages fail saying why (ruleOptions).
    if (headerValueProblem(e.value) !== null)
      invalid.push(
        `header '${k}': the value of ${variablesOf(v)
          .map((n) => `\${${n}}`)
          .join(', ')} holds a line break or another control character`,
      );
    else out[k] = e.value;
  }
  return { headers: out, missing, invalid };
}

function unset(names: readonly string[], what: string): FetchFailure {
  return new FetchFailure(
    'request',
    `environment variable(s) not set for ${what}: ${[...new Set(names)].join(', ')} (in the editor: Crawl Studio: Set Crawl Secret)`,
    false,
  );
}

/** A response a rule that reads JSON asks for when its headers do not say (an API may answer HTML otherwise). */
const JSON_ACCEPT = 'application/json, */*;q=0.5';

/**
 * The fetch options of each rule's pages: the task's (`base`), with the rule's headers, a JSON `accept` for rules
 * that read JSON, and JSON bodies kept. Computed once per rule; a missing variable fails the rule's pages.
 */
export function ruleOptions(
  task: CrawlTask,
  base: FetchOptions,
  env: Env = process.env,
): (rule: PageRule) => FetchOptions | FetchFailure {
  const cache = new Map<string, FetchOptions | FetchFailure>();
  const taskHeaders = expandHeaders(task.request.headers, env);
  return (rule) => {
    let o = cache.get(rule.name);
    if (o) return o;
    const own = Object.keys(rule.headers).length > 0;
    if (
      !own &&
      !rule.readsJson &&
      rule.format === null &&
      taskHeaders.missing.length === 0 &&
      taskHeaders.invalid.length === 0
    )
      o = base;
    else {
      const ruleHeaders = expandHeaders(rule.headers, env);
      const missing = [...taskHeaders.missing, ...ruleHeaders.missing];
      const invalid = [...taskHeaders.invalid, ...ruleHeaders.invalid];
      const lower = new Set(Object.keys({ ...task.request.headers, ...rule.headers }).map((k) => k.toLowerCase()));
      o = missing.length
        ? unset(missing, `the headers of rule '${rule.name}'`)
        : invalid.length
          ? new FetchFailure(
              'request',
              `the headers of rule '${rule.name}' cannot be sent: ${invalid.join('; ')}`,
              false,
            )
          : {
              ...base,
              headers: {
                ...(rule.readsJson && !lower.has('accept') ? { accept: JSON_ACCEPT } : {}),
                ...taskHeaders.headers,
                ...ruleHeaders.headers,
              },
              // A JSON response is extracted by rules that read JSON, and anything by a rule with a `format`.
              ...(rule.readsJson || rule.format !== null ? { keepNonHtml: true } : {}),
            };
    }
    cache.set(rule.name, o);
    return o;
  };
}

/** What a job's request adds to the fetch: its method and body, variables filled in. */
export function sendOptions(request: unknown, env: Env = process.env): Partial<FetchOptions> | FetchFailure {
  if (request === undefined) return {};
  if (!isJobRequest(request))
    return new FetchFailure(
      'request',
      `the job's request is not one this worker can send: ${JSON.stringify(request).slice(0, 200)}`,
      false,
    );
  if (!request.body) return { method: request.method };
  const { text, missing } = expandBody(request.body, env);
  if (missing.length) return unset(missing, `the ${request.method} body`);
  return { method: request.method, post: { contentType: CONTENT_TYPES[request.body.type], body: text } };
}

/**
 * Whether a failed request may be sent again. A GET, or a request marked `idempotent`, may whenever the failure is
 * retryable. Another (a POST that may create something) only when the server surely did not act on it: no
 * connection was made (refused, DNS, the proxy), or it answered 429 or 503, which say it did not process it. A
 * timeout, a reset connection or another 5xx may come after the server acted: that request is not repeated.
 */
export function mayRetry(request: JobRequest | undefined, f: FetchFailure): boolean {
  if (!f.retryable) return false;
  if (!request || request.idempotent) return true;
  switch (f.cause_) {
    case 'dns':
    case 'proxy':
    case 'session':
      return true;
    case 'http':
      return f.status === 429 || f.status === 503;
    case 'network':
      return /\bECONNREFUSED\b/.test(f.message);
    default:
      return false;
  }
}
