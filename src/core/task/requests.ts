import type { BodyTemplate, FieldSpec, HttpMethod, PagesSpec, RequestTemplate } from './model';
import { envNames, PAGE, parseTemplate, valueNames, type TemplatePart } from '../request/template';
import { headerNameProblem, headerValueProblem } from './headers';
import { variableKind, variableProblem } from './variables';

// The request parts of a task file, checked and normalised for parse.ts: start entries and follow entries that
// send a method, a body, values read from the page, or count pages. Every mistake is reported at its field.

type Path = (string | number)[];
export type Report = (path: Path, message: string, severity?: 'error' | 'warning', key?: string) => void;

export interface RawRequestParts {
  url?: string;
  method?: HttpMethod;
  fields?: Record<string, string | number | boolean>;
  json?: unknown;
  pages?: { from?: number; step?: number; max?: number };
  idempotent?: boolean;
}

/** The keys of an entry that make it a request rather than a link or a plain start URL. */
export const REQUEST_KEYS = ['method', 'fields', 'json', 'pages', 'idempotent'] as const;

function quote(v: string): string {
  return `'${v.length > 80 ? v.slice(0, 79) + '…' : v}'`;
}

/**
 * Parts of one template string, or null when it is broken (reported). `where` says which holes it may have: a
 * URL takes values, not variables (it is stored and shown); a body or header value takes both.
 */
function template(source: string, path: Path, where: 'url' | 'body' | 'header', report: Report): TemplatePart[] | null {
  const t = parseTemplate(source);
  if (!t.ok) {
    report(path, `${quote(source)}: ${t.problem}`);
    return null;
  }
  const env = envNames(t.parts);
  if (where === 'url' && env.length > 0) {
    report(
      path,
      `\${${env[0]}} in a URL would be stored and shown with the page: send it in a header (rules[].request.headers) or the body instead`,
    );
    return null;
  }
  for (const name of env) {
    const denied = variableProblem(name, 'request');
    if (denied !== null) {
      report(path, denied);
      return null;
    }
  }
  if (where === 'header' && valueNames(t.parts).length > 0) {
    report(
      path,
      `{${valueNames(t.parts)[0]}} in a header: headers take no values from the page (write {{ for a literal brace)`,
    );
    return null;
  }
  return [...t.parts];
}

/** Checks a header map: names (headers.ts), values (one line; variables a request may use); returns it as written. */
export function checkHeaders(
  headers: Record<string, string> | undefined,
  path: Path,
  report: Report,
): Record<string, string> {
  for (const [k, v] of Object.entries(headers ?? {})) {
    const name = headerNameProblem(k);
    if (name !== null) report(path, name, 'error', k);
    const value = headerValueProblem(v);
    if (value !== null) report([...path, k], value);
    else if (name === null) template(v, [...path, k], 'header', report);
  }
  return headers ?? {};
}

/** Every variable a task's headers and bodies name, for the editor's Secret Storage (see secrets.ts). */
export function requestVariables(sources: Iterable<string>): string[] {
  const out = new Set<string>();
  for (const s of sources) {
    const t = parseTemplate(s);
    if (t.ok) for (const n of envNames(t.parts)) if (variableKind(n) === 'secret') out.add(n);
  }
  return [...out];
}

/** The strings of a JSON body, with their paths. */
function jsonStrings(v: unknown, path: Path, out: [string, Path][]): void {
  if (typeof v === 'string') out.push([v, path]);
  else if (Array.isArray(v)) v.forEach((x, i) => jsonStrings(x, [...path, i], out));
  else if (v && typeof v === 'object') for (const [k, x] of Object.entries(v)) jsonStrings(x, [...path, k], out);
}

type EntryKind = 'start' | 'url' | 'form';

/**
 * A request template from an entry's fields (see RequestTemplate), or null when it has a mistake (reported).
 * `values` are the entry's own (already checked); `kind` says what the entry is: a start entry has no page to
 * read values from, a form follow's URL and method default to the form's.
 */
export function requestTemplate(
  raw: RawRequestParts,
  path: Path,
  kind: EntryKind,
  values: readonly FieldSpec[],
  report: Report,
): RequestTemplate | null {
  const holes = templateHoles(report);
  if (raw.url !== undefined) holes.read(raw.url, [...path, 'url'], 'url');
  let ok = bodyKindAllowed(raw, path, kind, report);
  const fields: Record<string, string> = {};
  for (const [k, v] of Object.entries(raw.fields ?? {})) {
    fields[k] = String(v);
    holes.read(String(v), [...path, 'fields', k], 'body');
  }
  if (raw.json !== undefined) {
    const strings: [string, Path][] = [];
    jsonStrings(raw.json, [...path, 'json'], strings);
    for (const [s, at] of strings) holes.read(s, at, 'body');
  }
  const body: BodyTemplate | null =
    raw.json !== undefined
      ? { kind: 'json', json: raw.json }
      : raw.fields !== undefined || kind === 'form'
        ? { kind: 'form', fields }
        : null;
  const method: HttpMethod | null = raw.method ?? null;
  if (method === 'GET' && kind !== 'form' && body) {
    report(
      [...path, 'method'],
      `a GET has no body: drop 'method' to POST the ${raw.json !== undefined ? 'json' : 'fields'}, or put the values in the URL`,
    );
    ok = false;
  }
  ok = valuesMatchHoles(holes.used, values, path, kind, report) && ok;
  const pages = pagesOf(raw, path, kind, holes.used.has(PAGE), report);
  if (!ok || !holes.ok() || pages === false) return null;
  const m = method ?? (kind === 'form' ? null : body ? 'POST' : 'GET');
  return {
    url: raw.url ?? '',
    method,
    body,
    idempotent: raw.idempotent ?? (m === 'GET' || m === 'PUT'),
    pages,
    values,
  };
}

/** The `{name}`s a request's URL and body use, read string by string; `ok` until one string is broken (reported). */
function templateHoles(report: Report) {
  const used = new Set<string>();
  let ok = true;
  return {
    used,
    ok: () => ok,
    read(source: string, at: Path, where: 'url' | 'body'): void {
      const parts = template(source, at, where, report);
      if (!parts) ok = false;
      else for (const n of valueNames(parts)) used.add(n);
    },
  };
}

/** A body is form fields or JSON, not both; a form is sent form-encoded. */
function bodyKindAllowed(raw: RawRequestParts, path: Path, kind: EntryKind, report: Report): boolean {
  let ok = true;
  if (raw.fields !== undefined && raw.json !== undefined) {
    report(path, `give either 'fields' (a form-encoded body) or 'json', not both`, 'error', 'json');
    ok = false;
  }
  if (kind === 'form' && raw.json !== undefined) {
    report(
      path,
      `a form is sent form-encoded: give its values in 'fields', or use 'url:' with 'json' to send JSON`,
      'error',
      'json',
    );
    ok = false;
  }
  return ok;
}

/** Every `{name}` used is one of the entry's values (or `{page}`); a value used nowhere is a warning. */
function valuesMatchHoles(
  used: ReadonlySet<string>,
  values: readonly FieldSpec[],
  path: Path,
  kind: EntryKind,
  report: Report,
): boolean {
  let ok = true;
  const defined = new Set(values.map((v) => v.name));
  for (const name of used) {
    if (name === PAGE || defined.has(name)) continue;
    const where =
      kind === 'start'
        ? `a start entry has no page to read {${name}} from: only {page} counts here`
        : `{${name}} is not one of the entry's values (${values.length ? values.map((v) => v.name).join(', ') : 'it has none'}): add it under 'values'`;
    report(path, `${where} (write {{${name}}} for literal braces)`, 'error', 'url');
    ok = false;
  }
  for (const v of values)
    if (!used.has(v.name))
      report(
        [...path, 'values', v.name],
        `{${v.name}} appears nowhere in the URL or the body: this value is read for nothing`,
        'warning',
      );
  return ok;
}

/** The pages a `{page}` counts (null: no {page}), or false when they are wrong (reported). */
function pagesOf(
  raw: RawRequestParts,
  path: Path,
  kind: EntryKind,
  countsPages: boolean,
  report: Report,
): PagesSpec | null | false {
  if (!countsPages) {
    if (raw.pages === undefined) return null;
    report(
      [...path, 'pages'],
      `'pages' counts {page}, which the URL and the body do not use: add {page} where the page number goes (e.g. ?page={page})`,
    );
    return false;
  }
  let ok = true;
  if (kind === 'form') {
    report(
      path,
      `a form follow does not count pages: use 'url:' (the form's action) with 'fields' to send {page}`,
      'error',
      'url',
    );
    ok = false;
  }
  const p = raw.pages ?? {};
  const pages: PagesSpec = { from: p.from ?? 1, step: p.step ?? 1, max: p.max ?? null };
  if (pages.max !== null && pages.max < pages.from) {
    report([...path, 'pages', 'max'], `the last page (${pages.max}) is before the first (${pages.from})`);
    ok = false;
  }
  return ok ? pages : false;
}

/** Whether a field spec (item field or request value) reads JSON. */
export function readsJsonPath(f: Pick<FieldSpec, 'selector'>): boolean {
  return f.selector !== null && f.selector.startsWith('$');
}
