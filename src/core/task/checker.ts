import { isJsonPath, type UrlPattern } from './model';
import { checkSelector } from '../extract/selectors';
import { checkJsonPath } from '../extract/json';
import { compileUrlPattern, UrlPatternError } from '../url/patterns';
import { parseDuration } from '../units';
import { credentialsMessage } from '../url/credentials';
import { redactUrl } from '../url/redact';
import { MAX_URL_LENGTH } from '../url/canonical';
import type { DiagnosticSink, Path } from './diagnosticSink';
import type { Report } from './requests';
import { quote, regexProblem } from './wording';

// What every part of the task parse checks values with, each problem reported at its field: URL patterns, CSS
// selectors and JSONPaths, durations, the URLs a file gives (start pages, a login page); and the environment the file's `${VAR}`s are read from (passed in by the
// caller: core reads no process.env).

/** Longest duration a task may set: Node's timers and AbortSignal.timeout cannot wait longer than 2^31-1 ms. */
export const MAX_DURATION_MS = 2 ** 31 - 1;

/** Environment variables by name, as process.env holds them. */
export type Env = Readonly<Record<string, string | undefined>>;

// Functions, not methods: the parse takes them out of the checker (`const { selector } = c`).
export interface Checker {
  readonly diags: DiagnosticSink;
  readonly report: Report;
  readonly env: Env;
  /** false: a `browser.actions` script (`evaluate`) is an error (actions.ts); undefined: not checked. */
  readonly allowScripts?: boolean;
  /** A compiled URL pattern, or null (reported). */
  readonly pattern: (path: Path, source: string) => UrlPattern | null;
  /** The patterns of a list that compile (the others reported). */
  readonly patterns: (path: Path, list: string[] | undefined) => UrlPattern[];
  /** Reports a CSS selector that does not parse. */
  readonly selector: (path: Path, sel: string) => void;
  /** Where a selector reads a page: a CSS selector, or a JSONPath (`$…`) into a JSON response. */
  readonly selectorOrPath: (path: Path, sel: string) => void;
  /** A duration in ms, reported when longer than a timer can wait. */
  readonly duration: (path: Path, value: string | number) => number;
}

export function makeChecker(diags: DiagnosticSink, env: Env, allowScripts?: boolean): Checker {
  const pattern = (path: Path, source: string): UrlPattern | null => {
    try {
      return compileUrlPattern(source);
    } catch (err) {
      if (err instanceof UrlPatternError) diags.atPath(path, err.message);
      else diags.atPath(path, `${quote(source)} is not a valid regular expression: ${regexProblem(err)}`);
      return null;
    }
  };
  const selector = (path: Path, sel: string): void => {
    const problem = checkSelector(sel);
    if (problem)
      diags.atPath(
        path,
        `${quote(sel)} is not a valid CSS selector (${problem.length > 200 ? problem.slice(0, 199) + '…' : problem})`,
      );
  };
  return {
    diags,
    env,
    allowScripts,
    report: (path, message, severity = 'error', key) => diags.atPath(path, message, severity, key),
    pattern,
    patterns: (path, list) =>
      (list ?? []).map((s, i) => pattern([...path, i], s)).filter((p): p is UrlPattern => p !== null),
    selector,
    selectorOrPath(path, sel) {
      if (!isJsonPath(sel)) return selector(path, sel);
      const problem = checkJsonPath(sel);
      if (problem)
        diags.atPath(
          path,
          `${quote(sel)} is not a valid JSONPath (${problem.length > 200 ? problem.slice(0, 199) + '…' : problem}); a path starts with $, e.g. $.items[*].name`,
        );
    },
    duration(path, value) {
      const ms = parseDuration(value);
      if (!(ms <= MAX_DURATION_MS)) {
        diags.atPath(
          path,
          `${typeof value === 'string' ? quote(value) : value} is too long: a duration can be at most 24 days (${MAX_DURATION_MS} ms), the longest a timer can wait`,
        );
      }
      return ms;
    },
  };
}

/** An absolute http(s) URL without credentials the crawler can take; null when it is not (reported at `path`). */
export function checkStartUrl(path: Path, text: string, diags: DiagnosticSink): URL | null {
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
    diags.atPath(
      path,
      `${quote(text, 120)} is ${url.href.length} characters long; the crawler refuses URLs over ${MAX_URL_LENGTH}`,
    );
    return null;
  }
  return url;
}
