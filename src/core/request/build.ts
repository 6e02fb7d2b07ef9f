import { createHash } from 'node:crypto';
import type { CrawlTask, HttpMethod, PageRule, RequestTemplate } from '../task/model';
import { bodyLabel, formEncode, isJobBody, renderBody, type FormPairs, type JobBody } from './body';
import { envNames, PAGE, renderText, templateParts, type Values } from './template';

// Requests built from a page or a start entry: a URL template filled with values, a form of the page, a body.
// What they become on a job (JobRequest: the method, the body with its variables as holes), how deduplication
// tells them apart (requestKey), and the series a `{page}` makes (nextInSeries). Pure: the analysis thread builds
// them, the worker sends them (worker/requests.ts), the designer shows them.

/** What a job carries beyond its URL when its request is not a plain GET. Never a secret (see JobBody). */
export interface JobRequest {
  readonly method: HttpMethod;
  readonly body: JobBody | null;
  /** Retried after any retryable failure, as a GET is; else only after those the server did not act on. */
  readonly idempotent: boolean;
  /** The request's identity beyond its URL (method and body), 16 hex digits: part of its deduplication key. */
  readonly id: string;
}

/** Where a series' template is: a start entry (index in task.start) or a rule's follow entry. */
export type SeriesOrigin = { readonly start: number } | { readonly rule: string; readonly follow: number };

/** On a job of a series: which template, its page number, the values it was built with, the URL it resolves against. */
export interface SeriesRef {
  readonly of: SeriesOrigin;
  readonly page: number;
  readonly values: Values;
  /** The page the series was found on, for a relative URL template; absent for an absolute one. */
  readonly base?: string;
}

export interface BuiltRequest {
  /** Absolute, not yet canonical (scope.ts canonicalises it as it does links). */
  readonly url: string;
  /** Null: a plain GET. */
  readonly request: JobRequest | null;
  readonly series: SeriesRef | null;
}

export type BuildResult =
  { readonly ok: true; readonly built: BuiltRequest } | { readonly ok: false; readonly problem: string };

/**
 * Form fields whose values change with every page load and say nothing about what is asked for: CSRF tokens.
 * They are sent, but left out of the request's identity, so the same search form on every page of a site is one
 * request, not one per page.
 */
const VOLATILE_FIELD = /csrf|xsrf|^authenticity_token$|^__RequestVerificationToken$|^_token$/i;

function identity(method: HttpMethod, body: JobBody | null, volatileFree: JobBody | null): string {
  const text = `${method}\n${body ? `${body.type}\n${bodyLabel(volatileFree ?? body)}` : ''}`;
  return createHash('sha1').update(text).digest('hex').slice(0, 16);
}

function jobRequest(
  method: HttpMethod,
  body: JobBody | null,
  idempotent: boolean,
  volatileFree: JobBody | null = null,
): JobRequest | null {
  if (method === 'GET' && body === null) return null;
  return { method, body, idempotent, id: identity(method, body, volatileFree) };
}

/** The URL of a template with `values` in, each encoded as a URL component, resolved against `base`. */
function templateUrl(source: string, values: Values, base: string | undefined): string | null {
  try {
    return new URL(renderText(templateParts(source), values, encodeURIComponent), base).href;
  } catch {
    return null;
  }
}

function methodOf(t: RequestTemplate): HttpMethod {
  return t.method ?? (t.body ? 'POST' : 'GET');
}

/** A `url:` follow's or a start entry's request with `values` (and `{page}` for a series) in. */
export function buildRequest(
  t: RequestTemplate,
  values: Values,
  base: string | undefined,
  origin: SeriesOrigin,
): BuildResult {
  const page = t.pages ? (typeof values[PAGE] === 'number' ? values[PAGE] : t.pages.from) : null;
  const all: Values = page === null ? values : { ...values, [PAGE]: page };
  const url = templateUrl(t.url, all, base);
  if (url === null) return { ok: false, problem: `'${renderText(templateParts(t.url), all)}' is not a valid URL` };
  const body = t.body ? renderBody(t.body, all) : null;
  const request = jobRequest(methodOf(t), body, t.idempotent);
  let series: SeriesRef | null = null;
  if (page !== null) {
    const rest = Object.fromEntries(Object.entries(values).filter(([k]) => k !== PAGE));
    const absolute = /^[a-z][a-z0-9+.-]*:/i.test(t.url);
    series = { of: origin, page, values: rest, ...(absolute || base === undefined ? {} : { base }) };
  }
  return { ok: true, built: { url, request, series } };
}

/** A form as the page has it (see form.ts). */
export interface PageForm {
  readonly action: string;
  readonly method: 'GET' | 'POST';
  readonly pairs: FormPairs;
}

/**
 * A `form:` follow's request for one form of the page: the form's action and method (unless the entry sets them),
 * its inputs, then the entry's `fields`. A GET sends them in the URL, where no variable may go.
 */
export function buildFormRequest(t: RequestTemplate, form: PageForm, values: Values): BuildResult {
  const method = t.method ?? form.method;
  const action = t.url ? templateUrl(t.url, values, form.action) : form.action;
  if (action === null) return { ok: false, problem: `'${t.url}' is not a valid URL` };
  const fields = t.body?.kind === 'form' ? t.body.fields : {};
  if (method === 'GET') {
    const secret = Object.entries(fields).find(([, v]) => envNames(templateParts(v)).length > 0);
    if (secret)
      return {
        ok: false,
        problem: `the form is sent with GET, which would put \${${envNames(templateParts(secret[1]))[0]}} (field '${secret[0]}') in the URL`,
      };
    const url = new URL(action);
    const ours = new Set(Object.keys(fields));
    const pairs = [
      ...form.pairs.filter(([n]) => !ours.has(n)),
      ...Object.entries(fields).map(([n, v]) => [n, renderText(templateParts(v), values)] as const),
    ];
    // As a browser submits a GET form: the pairs replace the action's query.
    url.search = pairs.map(([n, v]) => `${formEncode(n)}=${formEncode(v)}`).join('&');
    return { ok: true, built: { url: url.href, request: null, series: null } };
  }
  const template = { kind: 'form' as const, fields };
  const body = renderBody(template, values, form.pairs);
  const volatile = form.pairs.some(([n]) => VOLATILE_FIELD.test(n));
  const volatileFree = volatile
    ? renderBody(
        template,
        values,
        form.pairs.map(([n, v]) => [n, VOLATILE_FIELD.test(n) ? '' : v] as const),
      )
    : null;
  return {
    ok: true,
    built: { url: action, request: jobRequest(method, body, t.idempotent, volatileFree), series: null },
  };
}

/** A request's deduplication key: its canonical URL for a GET (as links always were), else method, URL and body. */
export function requestKey(url: string, request: JobRequest | null | undefined): string {
  return request ? `${request.method} ${url} #${request.id}` : url;
}

/** The template a series was made from, if the task still has it. */
function seriesTemplate(task: CrawlTask, of: SeriesOrigin): RequestTemplate | null {
  if ('start' in of) return task.start[of.start]?.request ?? null;
  const f = task.rules.find((r: PageRule) => r.name === of.rule)?.follow[of.follow];
  return f?.kind === 'request' ? f.request : null;
}

/** The next page of a series, or null past `pages.max` or when the task no longer has its template. */
export function nextInSeries(task: CrawlTask, ref: SeriesRef): BuildResult | null {
  const t = seriesTemplate(task, ref.of);
  if (!t?.pages) return null;
  const page = ref.page + t.pages.step;
  if (t.pages.max !== null && (t.pages.step > 0 ? page > t.pages.max : page < t.pages.max)) return null;
  return buildRequest(t, { ...ref.values, [PAGE]: page }, ref.base, ref.of);
}

/** Whether a job's request is well formed (jobs come through Redis: written by another version, or by hand). */
export function isJobRequest(v: unknown): v is JobRequest {
  const r = v as Partial<JobRequest> | null;
  return (
    !!r &&
    typeof r.method === 'string' &&
    ['GET', 'POST', 'PUT', 'PATCH'].includes(r.method) &&
    (r.body === null || isJobBody(r.body)) &&
    typeof r.idempotent === 'boolean' &&
    typeof r.id === 'string'
  );
}
