import { RE2JS } from 're2js';

// A field's `regex`, run by RE2 (the pure-JS port re2js) instead of V8's backtracking engine: matching time is
// linear in the text, so a pattern such as `(a+)+$` on a long field costs milliseconds, not seconds per page.
// The pattern is written in JavaScript syntax (what the docs and the designer show) and translated to RE2's;
// what RE2 cannot run in linear time (backreferences, lookahead, lookbehind) is refused when the file is parsed.
//
// The task keeps only the pattern's text, not a compiled object: a CrawlTask is structured-cloned into the
// analysis thread (src/worker/analysis.ts), which would strip a compiled matcher's methods. Each process or
// thread compiles a pattern once, on first use.

export interface FieldRegex {
  /** As written in the task file. */
  readonly source: string;
  /** The same pattern in RE2 syntax. */
  readonly re2: string;
}

/** RE2's own limit on counted repetition ({n,m}); larger counts are refused, as RE2 does. */
const MAX_REPEAT = 1000;

/** The field regex for `source`, or why it cannot be one (a sentence that does not repeat the pattern). */
export function compileFieldRegex(source: string): { ok: true; regex: FieldRegex } | { ok: false; problem: string } {
  try {
    new RegExp(source);
  } catch (err) {
    return { ok: false, problem: `it is not a valid regular expression: ${reason(err)}` };
  }
  const unsupported = unsupportedSyntax(source);
  if (unsupported) {
    return {
      ok: false,
      problem: `it uses ${unsupported}, which the linear-time regex engine (RE2) does not support; rewrite it without (e.g. match more and keep a capture group)`,
    };
  }
  let re2: string;
  try {
    re2 = RE2JS.translateRegExp(source);
    compiled(re2);
  } catch (err) {
    const r = reason(err).replace(/^error parsing regexp: /, '');
    const hint = /repeat count/.test(r) ? ` (RE2 allows counts up to ${MAX_REPEAT})` : '';
    return { ok: false, problem: `the linear-time regex engine (RE2) cannot run it: ${r}${hint}` };
  }
  return { ok: true, regex: { source, re2 } };
}

/**
 * The value a field keeps: the first capture group when the pattern has one and it took part in the match,
 * else the whole match; null when nothing matches. (As RegExp.prototype.exec gave `m[1] ?? m[0]`.)
 */
export function execFieldRegex(regex: FieldRegex, text: string): string | null {
  const re = compiled(regex.re2);
  const m = re.matcher(text);
  if (!m.find()) return null;
  const group = re.groupCount() >= 1 ? m.group(1) : null;
  return group ?? m.group(0) ?? '';
}

const cache = new Map<string, RE2JS>();
const CACHE_ENTRIES = 1000;

function compiled(re2: string): RE2JS {
  let re = cache.get(re2);
  if (!re) {
    re = RE2JS.compile(re2);
    if (cache.size >= CACHE_ENTRIES) cache.clear();
    cache.set(re2, re);
  }
  return re;
}

/** Names the first construct RE2 lacks, scanning the pattern outside character classes. */
function unsupportedSyntax(source: string): string | null {
  let inClass = false;
  for (let i = 0; i < source.length; i++) {
    const c = source[i]!;
    if (c === '\\') {
      const n = source[i + 1] ?? '';
      if (!inClass && /[1-9]/.test(n)) return `a backreference (\\${n})`;
      if (!inClass && n === 'k' && source[i + 2] === '<') return 'a named backreference (\\k<…>)';
      i++;
      continue;
    }
    if (inClass) {
      if (c === ']') inClass = false;
      continue;
    }
    if (c === '[') {
      // In JavaScript "[]" and "[^]" are whole classes: a ']' right after the opening never stays inside.
      let j = i + 1;
      if (source[j] === '^') j++;
      if (source[j] === ']') i = j;
      else inClass = true;
      continue;
    }
    if (c === '(' && source[i + 1] === '?') {
      const rest = source.slice(i + 2, i + 4);
      if (rest.startsWith('=') || rest.startsWith('!')) return 'a lookahead (?= or ?!)';
      if (rest === '<=' || rest === '<!') return 'a lookbehind (?<= or ?<!)';
    }
  }
  return null;
}

function reason(err: unknown): string {
  const msg = err instanceof Error ? err.message : String(err);
  // V8 says "Invalid regular expression: /…/: Unterminated group"; keep the reason, not the pattern it repeats.
  const r = err instanceof SyntaxError ? (/: ([^:]+)$/.exec(msg)?.[1] ?? msg) : msg;
  return r.length > 200 ? r.slice(0, 199) + '…' : r;
}
