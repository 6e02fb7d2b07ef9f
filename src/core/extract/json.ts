import {
  FunctionExpressionType,
  JSONPathEnvironment,
  JSONPathError,
  type FilterFunction,
  type JSONPathQuery,
  type JSONValue,
} from 'json-p3';
import { compileFieldRegex, execFieldRegex } from '../task/fieldRegex';

// JSONPath (RFC 9535) into JSON responses, by json-p3: the IETF standard syntax people meet in API docs and
// tools (`$.products[*].name`, `$..id`, filters such as `[?@.price < 10]`), compiled once per path and reused
// for every item of every page. Its environment is the standard one, with three bounds a crawler needs on
// documents it does not control:
//   - recursive descent (`..`) visits at most a fixed number of nesting levels;
//   - the standard match() and search() run in RE2 (linear time, as a field's `regex` does) instead of V8's
//     backtracking engine, so a filter's pattern cannot hang a worker on a crafted value;
//   - compiled paths are cached per process (a task crosses to the analysis thread as plain data).

const MAX_RECURSION = 64;

class Re2Function implements FilterFunction {
  readonly argTypes = [FunctionExpressionType.ValueType, FunctionExpressionType.ValueType];
  readonly returnType = FunctionExpressionType.LogicalType;
  constructor(private readonly whole: boolean) {}
  call(value: unknown, pattern: unknown): boolean {
    if (typeof value !== 'string' || typeof pattern !== 'string') return false;
    // I-Regexp (RFC 9485) is a subset of what compileFieldRegex accepts; a pattern it refuses matches nothing.
    const r = compileFieldRegex(this.whole ? `^(?:${pattern})$` : pattern);
    return r.ok && execFieldRegex(r.regex, value) !== null;
  }
}

class CrawlPathEnvironment extends JSONPathEnvironment {
  constructor() {
    super({ maxRecursionDepth: MAX_RECURSION });
  }
  protected override setupFilterFunctions(): void {
    super.setupFilterFunctions();
    this.functionRegister.set('match', new Re2Function(true));
    this.functionRegister.set('search', new Re2Function(false));
  }
}

let environment: CrawlPathEnvironment | null = null;
const compiled = new Map<string, JSONPathQuery>();
const CACHE_ENTRIES = 1000;

function compile(path: string): JSONPathQuery {
  let q = compiled.get(path);
  if (!q) {
    environment ??= new CrawlPathEnvironment();
    q = environment.compile(path);
    if (compiled.size >= CACHE_ENTRIES) compiled.clear();
    compiled.set(path, q);
  }
  return q;
}

/** Null when `path` is a JSONPath this engine runs, else why not (without repeating the path). */
export function checkJsonPath(path: string): string | null {
  try {
    compile(path);
    return null;
  } catch (err) {
    const msg = err instanceof Error ? err.message : String(err);
    return msg.replace(/ \('.*':\d+\)$/s, (m) => ` at character ${/:(\d+)\)$/.exec(m)![1]}`);
  }
}

/**
 * The values `path` matches in `value`, in document order. Where a list is wanted (`spread`), a match that is an
 * array gives its elements: `$.products` and `$.products[*]` both list the products. A path past the recursion
 * bound matches nothing rather than failing the page.
 */
export function queryJson(path: string, value: unknown, spread: boolean): unknown[] {
  let values: unknown[];
  try {
    values = compile(path)
      .query(value as JSONValue)
      .values();
  } catch (err) {
    if (err instanceof JSONPathError) return [];
    throw err;
  }
  return spread ? values.flatMap((v) => (Array.isArray(v) ? (v as unknown[]) : [v])) : values;
}

/** The first value `path` matches, or undefined. */
export function firstJson(path: string, value: unknown): unknown {
  try {
    return compile(path).match(value as JSONValue)?.value;
  } catch (err) {
    if (err instanceof JSONPathError) return undefined;
    throw err;
  }
}

/**
 * A JSON value as a field's text: strings as they are, numbers and booleans as JSON writes them, objects and
 * arrays as compact JSON; null (and nothing) is no value.
 */
export function jsonText(v: unknown): string | null {
  if (v === null || v === undefined) return null;
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return JSON.stringify(v);
}

/** A parsed JSON response. */
export class JsonPage {
  private constructor(readonly root: unknown) {}

  /** Throws a SyntaxError naming where the text stops being JSON. */
  static parse(text: string): JsonPage {
    // A BOM is allowed before JSON text (RFC 8259 says a parser may ignore it); decodeBody (worker/charset.ts) strips it, as iconv-lite does, but a caller may hand in text from elsewhere.
    return new JsonPage(JSON.parse(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text));
  }

  static of(value: unknown): JsonPage {
    return new JsonPage(value);
  }
}

/** Whether a Content-Type is JSON: application/json, text/json, or any `+json` type (application/ld+json, …). */
export function isJsonContentType(contentType: string | null): boolean {
  return contentType !== null && /^\s*(?:application|text)\/(?:[\w.!#$&^-]+\+)?json\s*(?:;|$)/i.test(contentType);
}

/** A match with where it is: its normalized path (RFC 9535 2.7), e.g. `$['products'][0]['name']`. */
export interface JsonMatch {
  readonly value: unknown;
  readonly path: string;
}

/**
 * The matches of `path` under `value`, whose own path is `at`, with their paths (the designer's highlights): the
 * same matches queryJson gives, arrays spread where `spread` asks.
 */
export function queryJsonPaths(path: string, value: unknown, at: string, spread: boolean): JsonMatch[] {
  let nodes;
  try {
    nodes = compile(path).query(value as JSONValue).nodes;
  } catch (err) {
    if (err instanceof JSONPathError) return [];
    throw err;
  }
  const out: JsonMatch[] = [];
  for (const n of nodes) {
    const p = at + n.getPath({ form: 'canonical' }).slice(1);
    if (spread && Array.isArray(n.value)) n.value.forEach((v, i) => out.push({ value: v, path: `${p}[${i}]` }));
    else out.push({ value: n.value, path: p });
  }
  return out;
}

/** The normalized path segment of an object member (RFC 9535 2.7: single quotes, escapes). */
export function memberSegment(name: string): string {
  const escaped = name
    .replace(/[\\']/g, (c) => `\\${c}`)
    // The control characters U+0000-U+001F (what is below the space).
    .replace(/[^\x20-\uffff]/g, (c) => {
      const short: Record<string, string> = { '\b': '\\b', '\f': '\\f', '\n': '\\n', '\r': '\\r', '\t': '\\t' };
      return short[c] ?? `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;
    });
  return `['${escaped}']`;
}
