import { isJsonPath, type FieldSpec, type FollowSpec, type ItemSpec } from './model';
import { parseJsonLdPath, type JsonLdPath } from '../extract/jsonld';
import { parseMicrodataPath, type MicrodataPath } from '../extract/microdata';
import { parseOpenGraphKey } from '../extract/opengraph';
import { compileFieldRegex, type FieldRegex } from './fieldRegex';
import { REQUEST_KEYS, requestTemplate } from './requests';
import type { Checker } from './checker';
import type { Path } from './diagnosticSink';
import type { RawField, RawFollow, RawItem } from './rawTask';
import { closest, quote } from './wording';

// A rule's items and their fields, and its follow entries (links, forms, request templates): checked, with
// their defaults applied.

export function buildItem(it: RawItem, path: Path, c: Checker): ItemSpec {
  const { diags, selectorOrPath: selector } = c;
  if (it.scope !== undefined) selector([...path, 'scope'], it.scope);
  const fields: FieldSpec[] = Object.entries(it.fields).map(([name, f]) =>
    buildField(name, f, [...path, 'fields', name], it.scope !== undefined, c),
  );
  const names = new Set(fields.map((f) => f.name));
  (it.key ?? []).forEach((k, i) => {
    if (!names.has(k)) {
      const guess = closest(k, [...names]);
      diags.atPath(
        [...path, 'key', i],
        `${quote(k)} is not a field of this item${guess ? `; did you mean '${guess}'?` : ''}`,
      );
    }
  });
  return { type: it.type, scope: it.scope ?? null, key: it.key ?? [], fields };
}

type FieldMapping = Exclude<RawField, string>;

/** An item field or a request value: a selector (CSS or JSONPath) and how to read and clean what it matches. */
function buildField(name: string, f: RawField, fpath: Path, inScope: boolean, c: Checker): FieldSpec {
  const { diags } = c;
  const spec = typeof f === 'string' ? { selector: f } : f;
  if (spec.selector !== undefined)
    c.selectorOrPath(typeof f === 'string' ? fpath : [...fpath, 'selector'], spec.selector);
  checkElementReads(spec, fpath, c);
  const structured = structuredSources(spec, fpath, c);
  checkOneSource(spec, fpath, inScope, c);
  let regex: FieldRegex | null = null;
  if (spec.regex !== undefined) {
    const r = compileFieldRegex(spec.regex);
    if (r.ok) regex = r.regex;
    else diags.atPath([...fpath, 'regex'], `${quote(spec.regex)} cannot be used: ${r.problem}`);
  }
  return {
    name,
    page: spec.page ?? null,
    ...structured,
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

/** `attr` and `html` read an element's HTML: not both, and not with a JSONPath. */
function checkElementReads(spec: FieldMapping, fpath: Path, { diags }: Checker): void {
  if (spec.attr !== undefined && spec.html) diags.atPath([...fpath, 'html'], `use either 'attr' or 'html', not both`);
  if (spec.selector === undefined || !isJsonPath(spec.selector)) return;
  for (const k of ['attr', 'html'] as const) {
    if (spec[k] !== undefined)
      diags.atPath(
        fpath,
        `'${k}' reads HTML: a JSONPath (${quote(spec.selector)}) already names the value to take`,
        'error',
        k,
      );
  }
}

/** The field's structured-data source (`jsonld`, `microdata`, `opengraph`) parsed, each given only when it parses. */
function structuredSources(
  spec: FieldMapping,
  fpath: Path,
  { diags }: Checker,
): Pick<FieldSpec, 'jsonld' | 'microdata' | 'opengraph'> {
  let jsonld: JsonLdPath | null = null;
  let microdata: MicrodataPath | null = null;
  let opengraph: string | null = null;
  if (spec.jsonld !== undefined) {
    const parsed = parseJsonLdPath(spec.jsonld);
    if (typeof parsed === 'string') diags.atPath([...fpath, 'jsonld'], parsed);
    else jsonld = parsed;
  }
  if (spec.microdata !== undefined) {
    const parsed = parseMicrodataPath(spec.microdata);
    if (typeof parsed === 'string') diags.atPath([...fpath, 'microdata'], parsed);
    else microdata = parsed;
  }
  if (spec.opengraph !== undefined) {
    const parsed = parseOpenGraphKey(spec.opengraph);
    if (typeof parsed !== 'string') diags.atPath([...fpath, 'opengraph'], parsed.error);
    else opengraph = parsed;
  }
  return { ...(jsonld ? { jsonld } : {}), ...(microdata ? { microdata } : {}), ...(opengraph ? { opengraph } : {}) };
}

/**
 * A field reads one source: the page's structured data, a fact of the page (`page`), or an element (a selector, or
 * the item's scope element).
 */
function checkOneSource(spec: FieldMapping, fpath: Path, inScope: boolean, { diags }: Checker): void {
  const sources = (['jsonld', 'microdata', 'opengraph'] as const).filter((k) => spec[k] !== undefined);
  if (sources.length > 0) {
    const source = sources[0]!;
    const what = { jsonld: 'JSON-LD', microdata: 'microdata', opengraph: 'OpenGraph tags' }[source];
    // Read from the page's structured data, not an element: what picks or reads an element has nothing to act on.
    for (const k of ['selector', 'attr', 'html', 'page'] as const) {
      if (spec[k] !== undefined)
        diags.atPath(
          fpath,
          `'${k}' does not go with '${source}: ${spec[source]}', which reads the page's ${what}, not an element: remove one of them`,
          'error',
          k,
        );
    }
    for (const k of sources.slice(1))
      diags.atPath(
        fpath,
        `'${k}' does not go with '${source}: ${spec[source]}': a field reads one source, remove one of them`,
        'error',
        k,
      );
  } else if (spec.page !== undefined) {
    // A page field reads the page, not an element: what picks or reads an element has nothing to act on.
    for (const k of ['selector', 'attr', 'html', 'all'] as const) {
      if (spec[k] !== undefined)
        diags.atPath(
          fpath,
          `'${k}' does not go with 'page: ${spec.page}', which takes the page's ${spec.page}, not an element's: remove one of them`,
          'error',
          k,
        );
    }
  } else if (spec.selector === undefined && !inScope && !spec.attr) {
    diags.atPath(fpath, `needs a 'selector' (there is no item 'scope' element to read from)`);
  }
}

/**
 * A follow entry: links (`selector`), a form to submit (`form`) or a request template (`url`), each with only the
 * options its kind takes. Null when it cannot be built (reported).
 */
export function buildFollow(f: RawFollow, path: Path, c: Checker): FollowSpec | null {
  const { diags, report, selectorOrPath: selector } = c;
  const kinds = (['selector', 'form', 'url'] as const).filter((k) => f[k] !== undefined);
  const base = { to: f.to ?? null, priority: f.priority ?? null };
  // `url` with `form` is the form sent elsewhere, not a kind of its own.
  const kind = f.form !== undefined ? 'form' : kinds[0];
  if (kind === undefined || (kinds.includes('selector') && kinds.length > 1)) {
    diags.atPath(
      path,
      kind === undefined
        ? `give 'selector' (links to follow), 'form' (a form of the page to submit) or 'url' (a request to build)`
        : `give one of 'selector' (links), 'form' (a form to submit) or 'url' (a request), not ${kinds.map((k) => `'${k}'`).join(' and ')}`,
    );
    return null;
  }
  if (kind === 'selector') {
    const sel = f.selector!;
    selector([...path, 'selector'], sel);
    for (const k of [...REQUEST_KEYS, 'values'] as const) {
      if (f[k] !== undefined)
        diags.atPath(
          path,
          `'${k}' builds a request: it goes with 'form' or 'url', not with 'selector' (links are fetched with a GET)`,
          'error',
          k,
        );
    }
    if (f.attr !== undefined && isJsonPath(sel))
      diags.atPath(path, `'attr' reads HTML: the strings a JSONPath matches are the URLs`, 'error', 'attr');
    return { kind: 'links', selector: sel, attr: f.attr ?? 'href', ...base };
  }
  if (f.attr !== undefined) diags.atPath(path, `'attr' is for 'selector' links`, 'error', 'attr');
  if (kind === 'form') selector([...path, 'form'], f.form!);
  if (kind === 'form' && isJsonPath(f.form!))
    diags.atPath([...path, 'form'], `a form is found with a CSS selector, e.g. 'form#search'`);
  const entries = Object.entries(f.values ?? {});
  const values = entries.map(([name, v]) => {
    const at: Path = [...path, 'values', name];
    if (name === 'page')
      diags.atPath(at, `{page} is the page counter (see 'pages'): give this value another name`, 'error');
    if (typeof v === 'object' && v.selector === undefined && v.page === undefined)
      diags.atPath(
        at,
        `needs a 'selector' (a CSS selector or a JSONPath) to read the value from the page, or 'page' (its url, status…)`,
      );
    return buildField(name, v, at, true, c);
  });
  const all = values.filter((v) => v.all);
  if (all.length > 1)
    diags.atPath(
      [...path, 'values', all[1]!.name],
      `only one value may take 'all' (a request per match): '${all[0]!.name}' already does`,
    );
  const request = requestTemplate(f, path, kind, values, report);
  if (!request) return null;
  return kind === 'form'
    ? { kind: 'form', selector: f.form!, request, ...base }
    : { kind: 'request', request, ...base };
}
