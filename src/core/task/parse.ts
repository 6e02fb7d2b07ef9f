import type { ErrorObject } from 'ajv';
import { CronExpressionParser } from 'cron-parser';
import { isMap, isPair, isScalar, isSeq, LineCounter, type Document, type Node } from 'yaml';
import { MAX_YAML_DEPTH, parseYamlBounded } from './yamlDocument';
// ajv's standalone code for crawl-task.schema.json, generated at build time (scripts/esbuild-task-validator.mjs).
import validateSchema from 'virtual:task-schema-validator';
import { pathToString, type Severity, type TaskDiagnostic } from './diagnostics';
import { compileFieldRegex, type FieldRegex } from './fieldRegex';
import { escapesFolder, expandStoreUrl, isAbsolutePath, sqlitePathOf, storeSecretProblems } from './storeUrl';
import { credentialsMessage } from '../url/credentials';
import { headerValueProblem } from './headers';
import { redactUrl } from '../url/redact';
import { expandProxyUrl, hasLiteralCredentials, loginLeaks, proxySecretProblems, templateProblems, variablesOf } from './secrets';
import { checkSelector } from '../extract/selectors';
import { checkJsonPath } from '../extract/json';
import { checkHeaders, readsJsonPath, REQUEST_KEYS, requestTemplate, requestVariables, type RawRequestParts, type Report } from './requests';
import { buildRequest } from '../request/build';
import { MAX_URL_LENGTH } from '../url/canonical';
import { compileUrlPattern, globToRegExp, matchesAny, UrlPatternError } from '../url/patterns';
import { checkReachability } from './reachability';
import { parseDuration, parseSize } from '../units';
import { parseFieldRef, type NotifyCondition, type NotifySpec } from '../history/notify';
import { variableProblem } from './variables';
import { DEFAULT_RETENTION, parseRetention as retentionOf, type HistoryRetention } from '../history/diff';
import { parseSince } from '../sitemap/lastmod';
import { parseJsonLdPath, type JsonLdPath } from '../extract/jsonld';
import { parseActions, type RawAction } from './actions';
import {
  DEFAULT_USER_AGENT,
  DEFAULTS,
  type BrowserSpec,
  type BrowserWait,
  type CrawlTask,
  type FieldSpec,
  type FollowSpec,
  isJsonPath,
  type LoginSpec,
  type ProxySpec,
  type SessionSpec,
  type ItemSpec,
  type PageRule,
  type PageValue,
  type SitemapStart,
  type StartUrl,
  type UrlPattern,
} from './model';

/** Longest duration a task may set: Node's timers and AbortSignal.timeout cannot wait longer than 2^31-1 ms. */
export const MAX_DURATION_MS = 2 ** 31 - 1;

export interface ParseResult {
  /** Null when any error was found. */
  readonly task: CrawlTask | null;
  readonly diagnostics: readonly TaskDiagnostic[];
}

type Path = (string | number)[];

/**
 * Largest task file, in characters (about bytes): a task is rules and a few start URLs, and the editor re-parses
 * the file as it is typed. Bulk URLs belong in the queue (crawl-studio enqueue), not in the file.
 */
export const MAX_TASK_FILE_CHARS = 5 * 1024 * 1024;

/** Most start URLs a task file may list. */
export const MAX_START_URLS = 10_000;

const BULK_URLS_HINT = 'for bulk URLs, list a few start pages and let the crawl follow links, or add them to a run from a file with `crawl-studio enqueue <task.crawl.yaml> --file urls.txt` (one URL a line, `-` for stdin)';

/** What only the caller can check, having the file system: the parse itself does no I/O. */
export interface ParseChecks {
  /**
   * Why the SQLite file a relative store.url names (as written, relative to the task file's folder) is not in
   * that folder once symlinks are resolved; null when it is. See workspace/storePlace.ts.
   */
  readonly storeFile?: (relativePath: string) => string | null;
  /** false: a `browser.actions` script (`evaluate`) is an error (see actions.ts); absent: not checked. */
  readonly allowScripts?: boolean;
}

/** Parses and validates a task file's text. Pure: the caller reads the file (and may pass `checks` that read more). */
export function parseTask(text: string, file: string, checks: ParseChecks = {}): ParseResult {
  const lineCounter = new LineCounter();
  if (text.length > MAX_TASK_FILE_CHARS) {
    lineCounter.addNewLine(0); // not parsed, so line 1 is the only one known
    const diags = new DiagnosticSink(file, text, lineCounter, null);
    diags.atOffsets(0, 0, '', `the file is ${(text.length / 1024 / 1024).toFixed(1)} MB, more than the ${MAX_TASK_FILE_CHARS / 1024 / 1024} MB a task file may be; ${BULK_URLS_HINT}`, 'error');
    return { task: null, diagnostics: diags.list };
  }
  const parsed = parseYamlBounded(text, { lineCounter, prettyErrors: false, uniqueKeys: true });
  if (!parsed.ok) {
    const diags = new DiagnosticSink(file, text, lineCounter, null);
    diags.atOffsets(parsed.offset, parsed.offset + 1, '', `the file nests collections more than ${MAX_YAML_DEPTH} levels deep; a task file needs far fewer`, 'error');
    return { task: null, diagnostics: diags.list };
  }
  const doc = parsed.doc;
  const diags = new DiagnosticSink(file, text, lineCounter, doc);

  for (const err of syntaxErrorsToShow(doc.errors)) {
    const [start, end] = err.pos;
    diags.atOffsets(start, end ?? start + 1, '', yamlMessage(err.message), 'error');
  }
  for (const warn of doc.warnings) {
    diags.atOffsets(warn.pos[0], warn.pos[1] ?? warn.pos[0] + 1, '', yamlMessage(warn.message), 'warning');
  }
  if (doc.errors.length > 0) return { task: null, diagnostics: diags.list };

  let value: unknown;
  try {
    // maxAliasCount bounds alias expansion: a "billion laughs" file is an error, not a hang.
    value = doc.toJS({ maxAliasCount: 100 });
  } catch (err) {
    diags.atPath([], err instanceof Error ? err.message : String(err));
    return { task: null, diagnostics: diags.list };
  }
  if (value === null || value === undefined) {
    diags.atPath([], 'the file is empty: a task needs at least `name`, `start` and `rules`');
    return { task: null, diagnostics: diags.list };
  }

  if (!validateSchema(value)) {
    const errors = relevantErrors(validateSchema.errors ?? []);
    for (const e of errors) reportSchemaError(diags, e);
    // Check the parts the schema found well-shaped too, so one pass reports every mistake in the file.
    const broken = errors.map((e) => e.instancePath);
    const isBroken = (path: Path) => {
      const p = path.length ? '/' + path.join('/') : '';
      return broken.some((b) => b === p || b.startsWith(p + '/'));
    };
    try {
      buildTask(salvage(value, isBroken), file, diags, checks);
    } catch {
      // A shape the salvage did not foresee: the schema errors already explain the file.
    }
    return { task: null, diagnostics: sortByPosition(diags.list) };
  }
  const task = buildTask(value as RawTask, file, diags, checks);
  for (const leak of loginLeaks(task)) diags.atPath(leak.path, leak.message);
  if (!diags.hasErrors) checkReachability(task, diags);
  return { task: diags.hasErrors ? null : task, diagnostics: sortByPosition(diags.list) };
}

/** A value from the file, quoted and cut: a message stays readable however long the value is. */
function quote(value: string, max = 80): string {
  return `'${value.length > max ? value.slice(0, max - 1) + '…' : value}'`;
}

function listNames(names: readonly string[], max = 10): string {
  const shown = names.slice(0, max).map((n) => (n.length > 40 ? n.slice(0, 39) + '…' : n));
  return names.length > max ? `${shown.join(', ')}, … (${names.length} in all)` : shown.join(', ');
}

/** The reason part of a RegExp error, without the pattern it repeats. */
function regexProblem(err: unknown): string {
  const msg = err instanceof Error ? err.message : String(err);
  const reason = /: ([^:]+)$/.exec(msg)?.[1] ?? msg;
  return reason.length > 200 ? reason.slice(0, 199) + '…' : reason;
}

function sortByPosition(list: TaskDiagnostic[]): TaskDiagnostic[] {
  return list.sort((a, b) => a.offset - b.offset);
}

/**
 * The well-shaped parts of an invalid file, as a RawTask the semantic checks can walk: broken start entries,
 * rules, follow rules and items are left out; a broken top-level list becomes empty.
 */
function salvage(value: unknown, isBroken: (path: Path) => boolean): RawTask {
  const v = (typeof value === 'object' && value !== null ? value : {}) as Record<string, unknown>;
  const list = (x: unknown) => (Array.isArray(x) ? x : []);
  const keep = <T>(items: unknown[], path: Path): T[] =>
    items.map((x, i) => [x, i] as const).filter(([, i]) => !isBroken([...path, i])).map(([x]) => x as T);
  const rules = keep<RawRule>(list(v.rules), ['rules']);
  const fixedRules = list(v.rules).flatMap((r, ri) => {
    if (typeof r !== 'object' || r === null || typeof (r as RawRule).name !== 'string') return [];
    const rr = r as RawRule;
    return [{
      name: rr.name,
      match: isBroken(['rules', ri, 'match']) ? [] : rr.match,
      follow: keep<RawFollow>(list(rr.follow), ['rules', ri, 'follow']),
      items: keep<RawItem>(list(rr.items), ['rules', ri, 'items']),
    }];
  });
  return {
    name: 'x',
    start: keep<RawStart>(list(v.start), ['start']),
    scope: isBroken(['scope']) ? {} : (v.scope as RawTask['scope']),
    canonical: isBroken(['canonical']) ? {} : (v.canonical as RawTask['canonical']),
    store: isBroken(['store']) ? {} : (v.store as RawTask['store']),
    schedule: isBroken(['schedule']) ? undefined : (v.schedule as RawTask['schedule']),
    notify: isBroken(['notify']) ? undefined : (v.notify as RawTask['notify']),
    rules: fixedRules.length ? fixedRules : rules,
  } as RawTask;
}

// ---------------------------------------------------------------------------------------------------------
// Locating problems in the source

class DiagnosticSink {
  readonly list: TaskDiagnostic[] = [];
  constructor(
    private readonly file: string,
    private readonly text: string,
    private readonly lines: LineCounter,
    private readonly doc: Document | null,
  ) {}

  get hasErrors(): boolean {
    return this.list.some((d) => d.severity === 'error');
  }

  atOffsets(start: number, end: number, path: string, message: string, severity: Severity): void {
    const s = this.lines.linePos(Math.min(start, this.text.length));
    const e = this.lines.linePos(Math.min(Math.max(end, start), this.text.length));
    this.list.push({
      file: this.file,
      path,
      message,
      severity,
      line: s.line,
      column: s.col,
      endLine: e.line,
      endColumn: e.col,
      offset: start,
      endOffset: Math.max(end, start),
    });
  }

  /** At the value of `path`; with `key`, at that key inside the mapping at `path` (for unknown fields). */
  atPath(path: Path, message: string, severity: Severity = 'error', key?: string): void {
    const node = nodeAt(this.doc, path);
    let range = node?.range;
    if (key !== undefined && isMap(node)) {
      const pair = node.items.find((p) => isScalar(p.key) && String(p.key.value) === key);
      const k = pair?.key as Node | undefined;
      if (k?.range) range = k.range;
    }
    const label = pathToString(key !== undefined ? [...path, key] : path);
    if (range) this.atOffsets(range[0], range[1], label, message, severity);
    else this.atOffsets(0, 0, label, message, severity);
  }
}

function nodeAt(doc: Document | null, path: Path): Node | null {
  if (!doc) return null;
  let node: unknown = doc.contents;
  for (const seg of path) {
    if (isMap(node)) {
      const pair = node.items.find((p) => isPair(p) && isScalar(p.key) && String(p.key.value) === String(seg));
      node = pair?.value ?? pair?.key;
    } else if (isSeq(node) && typeof seg === 'number') {
      node = node.items[seg];
    } else {
      return node as Node | null;
    }
    if (node === undefined || node === null) return null;
  }
  return (node as Node) ?? null;
}

function yamlMessage(message: string): string {
  // The yaml library appends a code frame; the editor and terminal show positions themselves.
  return message.split('\n')[0]!.replace(/ at line \d+, column \d+:?$/, '');
}

// ---------------------------------------------------------------------------------------------------------
// Turning JSON Schema errors into sentences

function instancePath(e: ErrorObject): Path {
  if (!e.instancePath) return [];
  return e.instancePath
    .split('/')
    .slice(1)
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
    .map((s) => (/^\d+$/.test(s) ? Number(s) : s));
}

function relevantErrors(errors: readonly ErrorObject[]): ErrorObject[] {
  // `if`/`then` wrappers restate their inner errors; a failed type check makes the rest of that node noise.
  const typeFailed = new Set(errors.filter((e) => e.keyword === 'type').map((e) => e.instancePath));
  const seen = new Set<string>();
  const out: ErrorObject[] = [];
  for (const e of errors) {
    if (e.keyword === 'if') continue;
    if (e.keyword !== 'type' && typeFailed.has(e.instancePath)) continue;
    const id = `${e.instancePath}|${e.keyword}|${JSON.stringify(e.params)}`;
    if (seen.has(id)) continue;
    seen.add(id);
    out.push(e);
  }
  return out;
}

const TYPE_WORDS: Record<string, string> = {
  object: 'a mapping (key: value)',
  array: 'a list',
  string: 'text',
  integer: 'a whole number',
  number: 'a number',
  boolean: 'true or false',
  null: 'empty',
};

function describeValue(v: unknown): string {
  if (v === null) return 'empty';
  if (Array.isArray(v)) return 'a list';
  if (typeof v === 'object') return 'a mapping';
  if (typeof v === 'string') return `'${v.length > 40 ? v.slice(0, 40) + '…' : v}'`;
  return String(v);
}

function reportSchemaError(diags: DiagnosticSink, e: ErrorObject): void {
  const path = instancePath(e);
  const parent = e.parentSchema as { errorMessage?: string; properties?: Record<string, unknown> } | undefined;
  switch (e.keyword) {
    case 'required':
      diags.atPath(path, `missing required field '${(e.params as { missingProperty: string }).missingProperty}'`);
      return;
    case 'additionalProperties': {
      const name = (e.params as { additionalProperty: string }).additionalProperty;
      const known = Object.keys(parent?.properties ?? {});
      const guess = closest(name, known);
      const hint = guess ? `; did you mean '${guess}'?` : known.length ? ` (known: ${known.join(', ')})` : '';
      diags.atPath(path, `unknown field ${quote(name)}${hint}`, 'error', name);
      return;
    }
    case 'type': {
      const want = ([] as string[]).concat((e.params as { type: string | string[] }).type);
      diags.atPath(path, `must be ${want.map((t) => TYPE_WORDS[t] ?? t).join(' or ')}, not ${describeValue(e.data)}`);
      return;
    }
    case 'enum': {
      const allowed = (e.params as { allowedValues: unknown[] }).allowedValues;
      diags.atPath(path, `must be one of ${allowed.map((a) => `'${a}'`).join(', ')}, not ${describeValue(e.data)}`);
      return;
    }
    case 'pattern':
      diags.atPath(path, `${describeValue(e.data)} ${parent?.errorMessage ?? `must match ${(e.params as { pattern: string }).pattern}`}`);
      return;
    case 'propertyNames': {
      const name = (e.params as { propertyName: string }).propertyName;
      diags.atPath(path, `${quote(name)}: ${(e.schema as { errorMessage?: string }).errorMessage ?? 'is not a valid name'}`, 'error', name);
      return;
    }
    case 'minItems':
      diags.atPath(path, `needs at least ${(e.params as { limit: number }).limit} entr${(e.params as { limit: number }).limit === 1 ? 'y' : 'ies'}`);
      return;
    case 'minProperties':
      diags.atPath(path, `needs at least ${(e.params as { limit: number }).limit} field`);
      return;
    default:
      diags.atPath(path, `${describeValue(e.data)} ${e.message ?? 'is not valid'}`);
  }
}

/**
 * The candidate nearest to `word`, if near enough. Bounded work: a file with thousands of names and broken
 * references must still validate at typing speed, so candidates whose length alone rules them out are skipped
 * and the search stops after about 50k character comparisons.
 */
function closest(word: string, candidates: readonly string[]): string | null {
  let best: string | null = null;
  let bestDist = Math.max(2, Math.floor(word.length / 3)) + 1;
  let budget = 50_000;
  for (const c of candidates) {
    if (Math.abs(c.length - word.length) >= bestDist) continue;
    budget -= (word.length + 1) * (c.length + 1);
    if (budget < 0) break;
    const d = levenshtein(word.toLowerCase(), c.toLowerCase());
    if (d < bestDist) {
      best = c;
      bestDist = d;
    }
  }
  return best;
}

function levenshtein(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const tmp = row[j]!;
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = tmp;
    }
  }
  return row[b.length]!;
}

// ---------------------------------------------------------------------------------------------------------
// Semantic checks and normalisation (the schema guarantees the shapes below)

type RawField = string | { selector?: string; page?: PageValue; jsonld?: string; attr?: string; html?: boolean; all?: boolean; trim?: boolean; regex?: string; url?: boolean; required?: boolean };
interface RawItem { type: string; scope?: string; key?: string[]; fields: Record<string, RawField> }
interface RawFollow extends RawRequestParts { selector?: string; attr?: string; form?: string; values?: Record<string, RawField>; to?: string; priority?: number }
interface RawRule { name: string; match?: string[]; follow?: RawFollow[]; items?: RawItem[]; browser?: RawBrowser; request?: { headers?: Record<string, string> }; format?: 'json' | 'html' }
type RawBrowser = boolean | { waitFor?: string | { selector: string }; block?: BrowserSpec['block'][number][]; timeout?: string | number; screenshot?: BrowserSpec['screenshot']; actions?: RawAction[] };
type RawStart = string | (RawRequestParts & { url?: string; sitemap?: string; rule?: string; priority?: number; since?: string; follow?: string[]; alternates?: boolean });
/** A task file's content as an object (what the YAML parses to): the library's `runCrawl({ name, start, rules })`. */
export type TaskDefinition = RawTask;

interface RawTask {
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
  login?: { url: string; browser?: boolean; form?: { selector?: string; submit?: string; fields: Record<string, string> }; post?: { fields?: Record<string, string>; json?: Record<string, unknown> }; check?: { selector?: string } };
  proxy?: { urls: string[]; rotate?: 'per-session' | 'per-request' };
  canonical?: { sortQuery?: boolean; stripTrailingSlash?: boolean; dropParams?: string[] };
  notify?: RawNotify;
  store?: { url?: string; onConflict?: 'update' | 'ignore'; batchSize?: number; flushInterval?: string | number; history?: { keep?: string | number } };
  schedule?: { cron?: string; every?: string | number; timezone?: string };
  browser?: RawBrowser;
  rules: RawRule[];
}

function buildTask(raw: RawTask, file: string, diags: DiagnosticSink, checks: ParseChecks): CrawlTask {
  const pattern = (path: Path, source: string): UrlPattern | null => {
    try {
      return compileUrlPattern(source);
    } catch (err) {
      if (err instanceof UrlPatternError) diags.atPath(path, err.message);
      else diags.atPath(path, `${quote(source)} is not a valid regular expression: ${regexProblem(err)}`);
      return null;
    }
  };
  const patterns = (path: Path, list: string[] | undefined): UrlPattern[] =>
    (list ?? []).map((s, i) => pattern([...path, i], s)).filter((p): p is UrlPattern => p !== null);
  const selector = (path: Path, sel: string): void => {
    const problem = checkSelector(sel);
    if (problem) diags.atPath(path, `${quote(sel)} is not a valid CSS selector (${problem.length > 200 ? problem.slice(0, 199) + '…' : problem})`);
  };
  // Where a selector reads a page: a CSS selector, or a JSONPath (`$…`) into a JSON response.
  const selectorOrPath = (path: Path, sel: string): void => {
    if (!isJsonPath(sel)) return selector(path, sel);
    const problem = checkJsonPath(sel);
    if (problem) diags.atPath(path, `${quote(sel)} is not a valid JSONPath (${problem.length > 200 ? problem.slice(0, 199) + '…' : problem}); a path starts with $, e.g. $.items[*].name`);
  };
  const report: Report = (path, message, severity = 'error', key) => diags.atPath(path, message, severity, key);

  const duration = (path: Path, value: string | number): number => {
    const ms = parseDuration(value);
    if (!(ms <= MAX_DURATION_MS)) {
      diags.atPath(path, `${typeof value === 'string' ? quote(value) : value} is too long: a duration can be at most 24 days (${MAX_DURATION_MS} ms), the longest a timer can wait`);
    }
    return ms;
  };

  const timeoutMs = raw.request?.timeout !== undefined ? duration(['request', 'timeout'], raw.request.timeout) : DEFAULTS.timeoutMs;
  const browser = (b: RawBrowser | undefined, path: Path, defaultTimeoutMs: number): BrowserSpec | null => {
    if (b === undefined || b === false) return null;
    const spec = b === true ? {} : b;
    let waitFor: BrowserWait = { kind: 'load' };
    const w = spec.waitFor;
    if (typeof w === 'object') {
      selector([...path, 'waitFor', 'selector'], w.selector);
      waitFor = { kind: 'selector', selector: w.selector };
    } else if (w === 'load' || w === 'domcontentloaded' || w === 'networkidle') {
      waitFor = { kind: w };
    } else if (w !== undefined) {
      waitFor = { kind: 'delay', ms: duration([...path, 'waitFor'], w) };
    }
    const limit = spec.timeout !== undefined ? duration([...path, 'timeout'], spec.timeout) : defaultTimeoutMs;
    if (waitFor.kind === 'delay' && waitFor.ms >= limit) {
      diags.atPath([...path, 'waitFor'], `a pause of ${waitFor.ms} ms never ends within the render's timeout (${limit} ms): shorten it or raise 'timeout'`);
    }
    const actions = parseActions(spec.actions, [...path, 'actions'], { report: (p, m, sev) => diags.atPath(p, m, sev), selector, duration, renderTimeoutMs: limit, allowScripts: checks.allowScripts });
    return { waitFor, block: spec.block ?? DEFAULTS.browserBlock, timeoutMs: limit, screenshot: spec.screenshot ?? 'never', actions };
  };

  const ruleNames = new Map<string, number>();
  raw.rules.forEach((r, i) => {
    if (ruleNames.has(r.name)) diags.atPath(['rules', i, 'name'], `rule '${r.name}' is defined twice (first at rules[${ruleNames.get(r.name)}])`);
    else ruleNames.set(r.name, i);
  });
  // Suggestions for the first broken references only: a generated file with thousands of them stays fast.
  let suggestions = 0;
  const checkRuleRef = (path: Path, name: string): void => {
    if (!ruleNames.has(name)) {
      const guess = suggestions++ < 50 ? closest(name, [...ruleNames.keys()]) : null;
      diags.atPath(path, `no rule named ${quote(name)}${guess ? `; did you mean '${guess}'?` : ` (rules: ${listNames([...ruleNames.keys()])})`}`);
    }
  };

  const rules: PageRule[] = raw.rules.map((r, ri) => {
    const follow: FollowSpec[] = (r.follow ?? []).flatMap((f, fi) => {
      if (f.to !== undefined) checkRuleRef(['rules', ri, 'follow', fi, 'to'], f.to);
      const spec = buildFollow(f, ['rules', ri, 'follow', fi], diags, report, selectorOrPath);
      return spec ? [spec] : [];
    });
    const items: ItemSpec[] = (r.items ?? []).map((it, ii) => buildItem(it, ['rules', ri, 'items', ii], diags, selectorOrPath));
    // A rule's own `browser` wins over the task's, `false` included.
    const browserAt: Path = r.browser !== undefined ? ['rules', ri, 'browser'] : ['browser'];
    const browserSpec = browser(r.browser ?? raw.browser, browserAt, timeoutMs);
    follow.forEach((f, fi) => {
      // A series goes on from its own pages: a follow that starts one on its own rule starts it again on each page.
      if (f.kind === 'request' && f.request.pages && f.to === r.name && r.follow?.[fi]?.pages?.from === undefined) {
        diags.atPath(['rules', ri, 'follow', fi], `this follow starts its series (page ${f.request.pages.from}) on every page of '${r.name}', its own pages included, and each series goes on by itself: start the series from a start entry ('url: …{page}'), or set 'pages.from' to the first page this follow should fetch (2 when this page is page 1)`, 'warning', 'url');
      }
    });
    const headers = headersOf(r.request?.headers, ['rules', ri, 'request', 'headers'], report);
    const format = r.format ?? null;
    const selectors: (string | null)[] = [
      ...items.flatMap((it) => [it.scope, ...it.fields.map((f) => f.selector)]),
      ...follow.flatMap((f) => (f.kind === 'links' ? [f.selector] : f.request.values.map((v) => v.selector))),
    ];
    const readsJson = format === 'json' || selectors.some((sel) => readsJsonPath({ selector: sel }));
    if (browserSpec && readsJson) {
      diags.atPath(r.browser !== undefined ? ['rules', ri, 'browser'] : ['rules', ri], `a rule that reads JSON is fetched, never rendered in a browser: remove 'browser' here${r.browser === undefined ? ` (it comes from the task's 'browser': set 'browser: false' on this rule)` : ''}`);
    }
    return { name: r.name, match: patterns(['rules', ri, 'match'], r.match), follow, items, browser: browserSpec, headers, format, readsJson };
  });

  const start: StartUrl[] = [];
  if (raw.start.length > MAX_START_URLS) {
    diags.atPath(['start'], `${raw.start.length} start URLs, more than the ${MAX_START_URLS} a task file may list; ${BULK_URLS_HINT}`);
  }
  const sitemaps: SitemapStart[] = [];
  const startUrl = (path: Path, text: string): URL | null => {
    let url: URL;
    try {
      url = new URL(text);
    } catch {
      diags.atPath(path, `${quote(redactUrl(text), 120)} is not an absolute URL (write it with http:// or https://)`);
      return null;
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      diags.atPath(path, `${quote(text, 120)} must be an http or https URL`);
      return null;
    }
    if (url.username !== '' || url.password !== '') {
      diags.atPath(path, credentialsMessage(text));
      return null;
    }
    if (url.href.length > MAX_URL_LENGTH) {
      // The crawler refuses longer URLs (canonical.ts): said here, instead of the URL vanishing from the crawl.
      diags.atPath(path, `${quote(text, 120)} is ${url.href.length} characters long; the crawler refuses URLs over ${MAX_URL_LENGTH}`);
      return null;
    }
    return url;
  };
  raw.start.slice(0, MAX_START_URLS).forEach((s, i) => {
    const entry: Exclude<RawStart, string> = typeof s === 'string' ? { url: s } : s;
    if (entry.rule !== undefined) checkRuleRef(['start', i, 'rule'], entry.rule);
    if (entry.sitemap !== undefined || entry.url === undefined) {
      const sm = sitemapStart(entry, ['start', i], startUrl, pattern, diags);
      if (sm) sitemaps.push(sm);
      if (sm && sm.rule === null && !rules.some((r) => r.match.length > 0)) {
        // Listed pages are routed as links are, by `match`: with none anywhere, the sitemap would crawl nothing.
        diags.atPath(['start', i], `no rule has 'match', so every page this sitemap lists would be dropped (no-rule): add 'rule: ${rules[0]?.name ?? '<rule>'}' to the entry, or 'match' to a rule`, 'warning', 'sitemap');
      }
      return;
    }
    // A start entry that sends more than a GET, or counts pages: its first request's URL is the one checked.
    const isRequest = typeof s !== 'string' && (REQUEST_KEYS.some((k) => entry[k] !== undefined) || /\{[A-Za-z_]/.test(entry.url));
    const request = isRequest ? requestTemplate(entry, ['start', i], 'start', [], report) : null;
    if (isRequest && !request) return;
    const first = request ? buildRequest(request, {}, undefined, { start: start.length }) : null;
    const url = startUrl(typeof s === 'string' ? ['start', i] : ['start', i, 'url'], first?.ok ? first.built.url : entry.url);
    if (!url) return;
    for (const k of ['since', 'follow', 'alternates'] as const) {
      if (entry[k] !== undefined) diags.atPath(['start', i], `'${k}' is for sitemaps: write 'sitemap: ${url.href}' instead of 'url:' if this is one`, 'error', k);
    }
    const byMatch = rules.find((r) => matchesAny(url.href, r.match));
    start.push({ url: url.href, rule: entry.rule ?? byMatch?.name ?? rules[0]?.name ?? '', priority: entry.priority ?? null, request });
  });

  const req = raw.request ?? {};
  const agentProblem = req.userAgent !== undefined ? headerValueProblem(req.userAgent) : null;
  if (agentProblem !== null) diags.atPath(['request', 'userAgent'], agentProblem);
  const pol = raw.politeness ?? {};
  const can = raw.canonical ?? {};
  const sc = raw.scope ?? {};
  return {
    name: raw.name,
    file,
    start,
    sitemaps,
    scope: {
      allow: patterns(['scope', 'allow'], sc.allow),
      deny: patterns(['scope', 'deny'], sc.deny),
      // A sitemap's host is a start host: a task that starts from sitemaps alone crawls the site they list.
      startHosts: [...new Set([...start, ...sitemaps].map((s) => new URL(s.url).host))],
      maxPages: sc.maxPages ?? null,
      maxDepth: sc.maxDepth ?? null,
      allowPrivate: sc.allowPrivate ?? false,
    },
    request: {
      timeoutMs,
      userAgent: req.userAgent ?? DEFAULT_USER_AGENT,
      headers: headersOf(req.headers, ['request', 'headers'], report),
      maxBytes: req.maxBytes !== undefined ? parseSize(req.maxBytes) : DEFAULTS.maxBytes,
      maxRedirects: req.maxRedirects ?? DEFAULTS.maxRedirects,
      robots: req.robots ?? DEFAULTS.robots,
      retries: {
        attempts: req.retries?.attempts ?? DEFAULTS.attempts,
        backoff: req.retries?.backoff ?? DEFAULTS.backoff,
        delayMs: req.retries?.delay !== undefined ? duration(['request', 'retries', 'delay'], req.retries.delay) : DEFAULTS.retryDelayMs,
      },
      // A scheduled task is re-crawled by definition; one run by hand asks for it.
      conditional: req.conditional ?? raw.schedule !== undefined,
    },
    politeness: {
      rateLimit: pol.rateLimit ? { max: pol.rateLimit.max, perMs: Math.max(1, duration(['politeness', 'rateLimit', 'per'], pol.rateLimit.per)) } : null,
      perHost: {
        concurrency: pol.perHost?.concurrency ?? DEFAULTS.perHostConcurrency,
        delayMs: pol.perHost?.delay !== undefined ? duration(['politeness', 'perHost', 'delay'], pol.perHost.delay) : DEFAULTS.perHostDelayMs,
      },
    },
    ...access(raw, startUrl, selector, diags),
    canonical: {
      sortQuery: can.sortQuery ?? DEFAULTS.sortQuery,
      stripTrailingSlash: can.stripTrailingSlash ?? DEFAULTS.stripTrailingSlash,
      dropParams: (can.dropParams ?? []).map((g) => globToRegExp(g)),
    },
    store: {
      url: raw.store?.url !== undefined ? storeUrl(raw.store.url, diags, checks) : null,
      onConflict: raw.store?.onConflict ?? DEFAULTS.onConflict,
      batchSize: raw.store?.batchSize ?? DEFAULTS.batchSize,
      flushMs: raw.store?.flushInterval !== undefined ? duration(['store', 'flushInterval'], raw.store.flushInterval) : DEFAULTS.flushMs,
      history: parseRetention(raw.store?.history?.keep),
    },
    schedule: buildSchedule(raw.schedule, diags),
    notify: buildNotify(raw.notify, diags),
    rules,
  };
}

/** The warning for a `${CRAWL_STUDIO_*}` that is not set in this process's environment. */
function unsetVariable(name: string): string {
  return `environment variable ${name} is not set here; the workers need it (in the editor: Crawl Studio: Set Crawl Secret)`;
}

/**
 * Headers checked (checkHeaders), with a warning at each header whose `${CRAWL_STUDIO_*}` is not set here, as for
 * `login` and `proxy` (see access below).
 */
function headersOf(headers: Record<string, string> | undefined, path: Path, report: Report): Record<string, string> {
  const checked = checkHeaders(headers, path, report);
  for (const [k, v] of Object.entries(checked)) {
    for (const name of requestVariables([v])) if (process.env[name] === undefined) report([...path, k], unsetVariable(name), 'warning');
  }
  return checked;
}

/**
 * `session`, `login` and `proxy`. A login needs sessions (its cookies are a session's), so `login` alone gives a pool
 * of one. Unset variables are warnings here: the editor's environment is not the workers' (Secret Storage fills
 * theirs), and the worker reports them by name when it logs in or connects.
 */
function access(
  raw: RawTask,
  startUrl: (path: Path, text: string) => URL | null,
  selector: (path: Path, sel: string) => void,
  diags: DiagnosticSink,
): { session: SessionSpec | null; login: LoginSpec | null; proxy: ProxySpec | null } {
  const variables = (path: Path, template: string, place: 'login' | 'proxy' = 'login') => {
    for (const p of templateProblems(template, place)) diags.atPath(path, p);
    for (const name of variablesOf(template)) {
      if (name.startsWith('CRAWL_STUDIO_') && process.env[name] === undefined) {
        diags.atPath(path, unsetVariable(name), 'warning');
      }
    }
  };
  let login: LoginSpec | null = null;
  const l = raw.login;
  if (l) {
    startUrl(['login', 'url'], l.url);
    if ((l.form === undefined) === (l.post === undefined)) {
      diags.atPath(['login'], `give either 'form' (fill in the form at url) or 'post' (send fields or json to url)`);
    }
    if (l.post && (l.post.fields === undefined) === (l.post.json === undefined)) {
      diags.atPath(['login', 'post'], `give either 'fields' (form-encoded) or 'json'`);
    }
    const fields = l.form?.fields ?? l.post?.fields ?? {};
    const fieldsPath: Path = l.form ? ['login', 'form', 'fields'] : ['login', 'post', 'fields'];
    for (const [k, v] of Object.entries(fields)) variables([...fieldsPath, k], v);
    const strings = (v: unknown, path: Path): void => {
      if (typeof v === 'string') variables(path, v);
      else if (v && typeof v === 'object') for (const [k, x] of Object.entries(v)) strings(x, [...path, k]);
    };
    if (l.post?.json) strings(l.post.json, ['login', 'post', 'json']);
    if (l.form?.selector !== undefined) selector(['login', 'form', 'selector'], l.form.selector);
    if (l.check?.selector !== undefined) selector(['login', 'check', 'selector'], l.check.selector);
    const browser = l.browser === true;
    if (browser && !l.form) diags.atPath(['login', 'browser'], `a browser login fills in a form: give 'form' with 'fields' (CSS selectors of the inputs and their values)`);
    if (browser) for (const k of Object.keys(l.form?.fields ?? {})) selector([...fieldsPath, k], k);
    if (l.form?.submit !== undefined) {
      if (!browser) diags.atPath(['login', 'form', 'submit'], `'submit' is for a browser login (browser: true); a fetched form is submitted to its action`);
      else selector(['login', 'form', 'submit'], l.form.submit);
    }
    login = {
      url: l.url,
      kind: l.form ? 'form' : 'post',
      formSelector: l.form?.selector ?? null,
      fields,
      browser,
      submitSelector: l.form?.submit ?? null,
      json: l.post?.json ?? null,
      checkSelector: l.check?.selector ?? null,
    };
  }
  let session: SessionSpec | null = null;
  const s = raw.session;
  if (s || login) {
    if (s?.retireOn?.selector !== undefined) selector(['session', 'retireOn', 'selector'], s.retireOn.selector);
    session = {
      pool: s?.pool ?? (login ? 1 : 4),
      maxPages: s?.maxPages ?? null,
      retireOnStatus: s?.retireOn?.status ?? DEFAULTS.retireOnStatus,
      retireOnSelector: s?.retireOn?.selector ?? null,
    };
  }
  let proxy: ProxySpec | null = null;
  if (raw.proxy) {
    raw.proxy.urls.forEach((u, i) => {
      const path: Path = ['proxy', 'urls', i];
      if (hasLiteralCredentials(u)) {
        diags.atPath(path, `the proxy's password is written in the file: write it as \${CRAWL_STUDIO_PROXY_PASSWORD} (an environment variable) instead`);
        return;
      }
      variables(path, u, 'proxy');
      for (const p of proxySecretProblems(u)) diags.atPath(path, p);
      if (templateProblems(u, 'proxy').length === 0 && variablesOf(u).every((n) => process.env[n] !== undefined)) {
        for (const p of expandProxyUrl(u, process.env).problems) diags.atPath(path, p);
      }
    });
    proxy = { urls: raw.proxy.urls, rotate: raw.proxy.rotate ?? 'per-session' };
  }
  return { session, login, proxy };
}

/** A `start` entry with `sitemap:` (see SitemapStart); null when it has a mistake, reported at its field. */
function sitemapStart(
  entry: Exclude<RawStart, string>,
  path: Path,
  startUrl: (path: Path, text: string) => URL | null,
  pattern: (path: Path, source: string) => UrlPattern | null,
  diags: DiagnosticSink,
): SitemapStart | null {
  if (entry.sitemap === undefined) {
    diags.atPath(path, `give the entry a 'url' (a page) or a 'sitemap' (a sitemap.xml or robots.txt)`);
    return null;
  }
  if (entry.url !== undefined) {
    diags.atPath(path, `give either 'url' (a page) or 'sitemap', not both: write a second entry for the other`, 'error', 'url');
    return null;
  }
  for (const k of REQUEST_KEYS) {
    if (entry[k] !== undefined) diags.atPath(path, `'${k}' is for requests: a sitemap is read with a GET`, 'error', k);
  }
  const url = startUrl([...path, 'sitemap'], entry.sitemap);
  let ok = url !== null;
  let since = null;
  if (entry.since !== undefined) {
    since = parseSince(entry.since);
    if (!since) {
      diags.atPath([...path, 'since'], `${quote(entry.since)} is neither a date (2026-01-01, 2026-01-01T08:00:00Z) nor an age (30d, 12h, 2w, 90m)`);
      ok = false;
    }
  }
  const follow = (entry.follow ?? []).map((f, i) => pattern([...path, 'follow', i], f));
  if (!ok || !url || follow.includes(null)) return null;
  return {
    url: url.href,
    // Only the file itself: /robots.txt?x or /a/robots.txt are ordinary URLs a site may answer with a sitemap.
    robots: url.pathname === '/robots.txt' && url.search === '',
    rule: entry.rule ?? null,
    priority: entry.priority ?? null,
    since,
    follow: follow as UrlPattern[],
    alternates: entry.alternates ?? false,
  };
}

function buildSchedule(raw: RawTask['schedule'], diags: DiagnosticSink): CrawlTask['schedule'] {
  if (!raw) return null;
  if ((raw.cron === undefined) === (raw.every === undefined)) {
    diags.atPath(['schedule'], `give either 'cron' or 'every'`);
    return null;
  }
  const timezone = raw.timezone ?? 'UTC';
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: timezone });
  } catch {
    diags.atPath(['schedule', 'timezone'], `'${timezone}' is not a known time zone (use an IANA name such as Europe/Berlin)`);
    return null;
  }
  if (raw.cron !== undefined) {
    try {
      // The parser BullMQ's job schedulers use, so a pattern accepted here is one the queue accepts.
      CronExpressionParser.parse(raw.cron, { tz: timezone });
    } catch (err) {
      const msg = (err as Error).message;
      diags.atPath(['schedule', 'cron'], `'${raw.cron}' is not a valid cron pattern: ${msg}`);
      return null;
    }
  }
  const everyMs = raw.every !== undefined ? parseDuration(raw.every) : null;
  if (everyMs !== null && everyMs < 1000) {
    diags.atPath(['schedule', 'every'], 'must be at least 1s');
    return null;
  }
  return { cron: raw.cron ?? null, everyMs, timezone };
}

/**
 * `store.url` with its `${VAR}`s expanded (see storeUrl.ts for which, and how): an unset or disallowed variable, a
 * URL that does not parse, or a relative SQLite path out of the task file's folder is an error at the field.
 * Messages quote the template, never the expanded value.
 */
function storeUrl(template: string, diags: DiagnosticSink, checks: ParseChecks): string {
  const path: Path = ['store', 'url'];
  const { url, problems } = expandStoreUrl(template, process.env);
  for (const p of problems) diags.atPath(path, p.message);
  for (const p of storeSecretProblems(template, process.env)) diags.atPath(path, p);
  const sqlite = sqlitePathOf(url);
  if (sqlite !== null && !isAbsolutePath(sqlite) && escapesFolder(sqlite)) {
    diags.atPath(
      path,
      `${quote(template, 120)} points outside the task file's folder: keep the store inside it (e.g. sqlite:.crawl/items.sqlite), ` +
        'or give an absolute path to use a file elsewhere on purpose',
    );
  } else if (sqlite !== null && !isAbsolutePath(sqlite) && checks.storeFile) {
    const problem = checks.storeFile(sqlite);
    if (problem !== null) diags.atPath(path, problem);
  }
  return url;
}

function buildItem(
  it: RawItem,
  path: Path,
  diags: DiagnosticSink,
  selector: (path: Path, sel: string) => void,
): ItemSpec {
  if (it.scope !== undefined) selector([...path, 'scope'], it.scope);
  const fields: FieldSpec[] = Object.entries(it.fields).map(([name, f]) => buildField(name, f, [...path, 'fields', name], it.scope !== undefined, diags, selector));
  const names = new Set(fields.map((f) => f.name));
  (it.key ?? []).forEach((k, i) => {
    if (!names.has(k)) {
      const guess = closest(k, [...names]);
      diags.atPath([...path, 'key', i], `${quote(k)} is not a field of this item${guess ? `; did you mean '${guess}'?` : ''}`);
    }
  });
  return { type: it.type, scope: it.scope ?? null, key: it.key ?? [], fields };
}

/** An item field or a request value: a selector (CSS or JSONPath) and how to read and clean what it matches. */
function buildField(name: string, f: RawField, fpath: Path, inScope: boolean, diags: DiagnosticSink, selector: (path: Path, sel: string) => void): FieldSpec {
  const spec = typeof f === 'string' ? { selector: f } : f;
  if (spec.selector !== undefined) selector(typeof f === 'string' ? fpath : [...fpath, 'selector'], spec.selector);
  if (spec.attr !== undefined && spec.html) diags.atPath([...fpath, 'html'], `use either 'attr' or 'html', not both`);
  if (spec.selector !== undefined && isJsonPath(spec.selector)) {
    for (const k of ['attr', 'html'] as const) {
      if (spec[k] !== undefined) diags.atPath(fpath, `'${k}' reads HTML: a JSONPath (${quote(spec.selector)}) already names the value to take`, 'error', k);
    }
  }
  let jsonld: JsonLdPath | null = null;
  if (spec.jsonld !== undefined) {
    const parsed = parseJsonLdPath(spec.jsonld);
    if (typeof parsed === 'string') diags.atPath([...fpath, 'jsonld'], parsed);
    else jsonld = parsed;
    // Read from the page's structured data, not an element: what picks or reads an element has nothing to act on.
    for (const k of ['selector', 'attr', 'html', 'page'] as const) {
      if (spec[k] !== undefined) diags.atPath(fpath, `'${k}' does not go with 'jsonld: ${spec.jsonld}', which reads the page's JSON-LD, not an element: remove one of them`, 'error', k);
    }
  } else if (spec.page !== undefined) {
    // A page field reads the page, not an element: what picks or reads an element has nothing to act on.
    for (const k of ['selector', 'attr', 'html', 'all'] as const) {
      if (spec[k] !== undefined) diags.atPath(fpath, `'${k}' does not go with 'page: ${spec.page}', which takes the page's ${spec.page}, not an element's: remove one of them`, 'error', k);
    }
  } else if (spec.selector === undefined && !inScope && !spec.attr) {
    diags.atPath(fpath, `needs a 'selector' (there is no item 'scope' element to read from)`);
  }
  let regex: FieldRegex | null = null;
  if (spec.regex !== undefined) {
    const r = compileFieldRegex(spec.regex);
    if (r.ok) regex = r.regex;
    else diags.atPath([...fpath, 'regex'], `${quote(spec.regex)} cannot be used: ${r.problem}`);
  }
  return {
    name,
    page: spec.page ?? null,
    ...(jsonld ? { jsonld } : {}),
    selector: spec.selector ?? null,
    attr: spec.attr ?? null,
    html: spec.html ?? false,
    all: spec.all ?? false,
    trim: spec.trim ?? true,
    regex,
    url: spec.url ?? false,
    required: spec.required ?? false,
  };
}

/**
 * A follow entry: links (`selector`), a form to submit (`form`) or a request template (`url`), each with only the
 * options its kind takes. Null when it cannot be built (reported).
 */
function buildFollow(f: RawFollow, path: Path, diags: DiagnosticSink, report: Report, selector: (path: Path, sel: string) => void): FollowSpec | null {
  const kinds = (['selector', 'form', 'url'] as const).filter((k) => f[k] !== undefined);
  const base = { to: f.to ?? null, priority: f.priority ?? null };
  // `url` with `form` is the form sent elsewhere, not a kind of its own.
  const kind = f.form !== undefined ? 'form' : kinds[0];
  if (kind === undefined || (kinds.includes('selector') && kinds.length > 1)) {
    diags.atPath(path, kind === undefined
      ? `give 'selector' (links to follow), 'form' (a form of the page to submit) or 'url' (a request to build)`
      : `give one of 'selector' (links), 'form' (a form to submit) or 'url' (a request), not ${kinds.map((k) => `'${k}'`).join(' and ')}`);
    return null;
  }
  if (kind === 'selector') {
    const sel = f.selector!;
    selector([...path, 'selector'], sel);
    for (const k of [...REQUEST_KEYS, 'values'] as const) {
      if (f[k] !== undefined) diags.atPath(path, `'${k}' builds a request: it goes with 'form' or 'url', not with 'selector' (links are fetched with a GET)`, 'error', k);
    }
    if (f.attr !== undefined && isJsonPath(sel)) diags.atPath(path, `'attr' reads HTML: the strings a JSONPath matches are the URLs`, 'error', 'attr');
    return { kind: 'links', selector: sel, attr: f.attr ?? 'href', ...base };
  }
  if (f.attr !== undefined) diags.atPath(path, `'attr' is for 'selector' links`, 'error', 'attr');
  if (kind === 'form') selector([...path, 'form'], f.form!);
  if (kind === 'form' && isJsonPath(f.form!)) diags.atPath([...path, 'form'], `a form is found with a CSS selector, e.g. 'form#search'`);
  const entries = Object.entries(f.values ?? {});
  const values = entries.map(([name, v]) => {
    const at: Path = [...path, 'values', name];
    if (name === 'page') diags.atPath(at, `{page} is the page counter (see 'pages'): give this value another name`, 'error');
    if (typeof v === 'object' && v.selector === undefined && v.page === undefined) diags.atPath(at, `needs a 'selector' (a CSS selector or a JSONPath) to read the value from the page, or 'page' (its url, status…)`);
    return buildField(name, v, at, true, diags, selector);
  });
  const all = values.filter((v) => v.all);
  if (all.length > 1) diags.atPath([...path, 'values', all[1]!.name], `only one value may take 'all' (a request per match): '${all[0]!.name}' already does`);
  const request = requestTemplate(f, path, kind, values, report);
  if (!request) return null;
  return kind === 'form' ? { kind: 'form', selector: f.form!, request, ...base } : { kind: 'request', request, ...base };
}

/**
 * The YAML errors worth showing: the first, and any later duplicate key (an independent mistake). What follows a
 * syntax error is the parser losing its footing, not more mistakes: a missing `}` gave three errors on the next
 * line (issue 23, item 10). They show up again, if real, once the first is fixed.
 */
export function syntaxErrorsToShow<E extends { readonly code: string }>(errors: readonly E[]): E[] {
  return errors.filter((e, i) => i === 0 || e.code === 'DUPLICATE_KEY');
}

/** store.history.keep (the schema checked its form): runs, or days. */
function parseRetention(keep: string | number | undefined): HistoryRetention {
  return keep === undefined ? DEFAULT_RETENTION : retentionOf(keep);
}

interface RawNotify {
  webhook: string;
  when?: { changed?: string; moved?: string; percent?: number }[];
}

/**
 * `notify`: the webhook must be exactly one `${CRAWL_STUDIO_WEBHOOK*}` variable (the file cannot choose where a
 * run's changes go, nor send another secret there); each condition names a type or a type's field.
 */
function buildNotify(raw: RawNotify | undefined, diags: DiagnosticSink): NotifySpec | null {
  if (!raw) return null;
  const m = /^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$/.exec(raw.webhook.trim());
  if (!m) {
    diags.atPath(['notify', 'webhook'], `${quote(raw.webhook, 80)} is not one variable: write the webhook as \${CRAWL_STUDIO_WEBHOOK_URL} and set that variable to its URL (a task file is shared: the URL and its token stay out of it)`);
  } else {
    const problem = variableProblem(m[1]!, 'webhook');
    if (problem) diags.atPath(['notify', 'webhook'], problem);
  }
  const when: NotifyCondition[] = [];
  (raw.when ?? []).forEach((c, i) => {
    const path: Path = ['notify', 'when', i];
    if ((c.changed === undefined) === (c.moved === undefined)) return diags.atPath(path, 'a condition is either `changed: type.field` or `moved: type.field` with `percent: N`');
    if (c.changed !== undefined) return when.push({ kind: 'changed', ...parseFieldRef(c.changed) });
    const ref = parseFieldRef(c.moved!);
    if (ref.field === null) return diags.atPath([...path, 'moved'], `${quote(c.moved!, 60)} names no field: write type.field, e.g. product.price`);
    if (c.percent === undefined) return diags.atPath(path, '`moved` needs `percent: N` (how far the number must move, in percent)');
    when.push({ kind: 'moved', type: ref.type, field: ref.field, percent: c.percent });
  });
  return { webhook: raw.webhook.trim(), when };
}
