import type { ErrorObject } from 'ajv';
import type { DiagnosticSink, Path } from './diagnosticSink';
import type { RawFollow, RawItem, RawRule, RawStart, RawTask } from './rawTask';
import { closest, quote } from './wording';

// Turning JSON Schema errors into sentences at their fields, and keeping the well-shaped rest of an invalid file
// for the semantic checks, so one pass reports every mistake.

/**
 * The well-shaped parts of an invalid file, as a RawTask the semantic checks can walk: broken start entries,
 * rules, follow rules and items are left out; a broken top-level list becomes empty.
 */
export function salvage(value: unknown, isBroken: (path: Path) => boolean): RawTask {
  const v = (typeof value === 'object' && value !== null ? value : {}) as Record<string, unknown>;
  const list = (x: unknown): unknown[] => (Array.isArray(x) ? x : []);
  const keep = <T>(items: unknown[], path: Path): T[] =>
    items
      .map((x, i) => [x, i] as const)
      .filter(([, i]) => !isBroken([...path, i]))
      .map(([x]) => x as T);
  const rules = keep<RawRule>(list(v.rules), ['rules']);
  const fixedRules = list(v.rules).flatMap((r, ri) => {
    if (typeof r !== 'object' || r === null || typeof (r as RawRule).name !== 'string') return [];
    const rr = r as RawRule;
    return [
      {
        name: rr.name,
        match: isBroken(['rules', ri, 'match']) ? [] : rr.match,
        follow: keep<RawFollow>(list(rr.follow), ['rules', ri, 'follow']),
        items: keep<RawItem>(list(rr.items), ['rules', ri, 'items']),
      },
    ];
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
  };
}

// ---------------------------------------------------------------------------------------------------------

function instancePath(e: ErrorObject): Path {
  if (!e.instancePath) return [];
  return e.instancePath
    .split('/')
    .slice(1)
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
    .map((s) => (/^\d+$/.test(s) ? Number(s) : s));
}

export function relevantErrors(errors: readonly ErrorObject[]): ErrorObject[] {
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
  // What is left of a parsed file: a number or a boolean.
  const scalar = typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint' || v === undefined;
  return scalar ? String(v) : typeof v;
}

export function reportSchemaError(diags: DiagnosticSink, e: ErrorObject): void {
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
      const allowed = (e.params as { allowedValues: string[] }).allowedValues;
      diags.atPath(path, `must be one of ${allowed.map((a) => `'${a}'`).join(', ')}, not ${describeValue(e.data)}`);
      return;
    }
    case 'pattern':
      diags.atPath(
        path,
        `${describeValue(e.data)} ${parent?.errorMessage ?? `must match ${(e.params as { pattern: string }).pattern}`}`,
      );
      return;
    case 'propertyNames': {
      const name = (e.params as { propertyName: string }).propertyName;
      diags.atPath(
        path,
        `${quote(name)}: ${(e.schema as { errorMessage?: string }).errorMessage ?? 'is not a valid name'}`,
        'error',
        name,
      );
      return;
    }
    case 'minItems':
      diags.atPath(
        path,
        `needs at least ${(e.params as { limit: number }).limit} entr${(e.params as { limit: number }).limit === 1 ? 'y' : 'ies'}`,
      );
      return;
    case 'minProperties':
      diags.atPath(path, `needs at least ${(e.params as { limit: number }).limit} field`);
      return;
    default:
      diags.atPath(path, `${describeValue(e.data)} ${e.message ?? 'is not valid'}`);
  }
}
