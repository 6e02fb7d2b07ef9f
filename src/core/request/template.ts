// The strings of a request the task file writes: a URL, body fields, JSON strings. Two kinds of hole:
//   {name}            a value read from the page (`values:`), or {page}, the page number of a series
//   ${CRAWL_STUDIO_X} an environment variable, expanded by the worker as it sends (bodies only, never URLs)
// and `{{` / `}}` for a literal brace. Parsed once into parts and rendered in one pass, so a value from the page
// is never read as a template: a page that holds the text "${CRAWL_STUDIO_PASSWORD}" sends that text, not the
// password.

export type TemplatePart = { readonly text: string } | { readonly value: string } | { readonly env: string };

export type TemplateResult =
  { readonly ok: true; readonly parts: readonly TemplatePart[] } | { readonly ok: false; readonly problem: string };

/** The built-in value: the page number of a series (see series in build.ts). */
export const PAGE = 'page';

const HOLE = /\$\{([A-Za-z0-9_]+)\}|\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}/g;

export function parseTemplate(source: string): TemplateResult {
  const parts: TemplatePart[] = [];
  let text = '';
  let last = 0;
  for (const m of source.matchAll(HOLE)) {
    text += source.slice(last, m.index);
    last = m.index + m[0].length;
    if (m[0] === '{{') text += '{';
    else if (m[0] === '}}') text += '}';
    else {
      if (text) parts.push({ text });
      text = '';
      parts.push(m[1] !== undefined ? { env: m[1] } : { value: m[2]! });
    }
  }
  text += source.slice(last);
  if (text) parts.push({ text });
  if (/\$\{(?![A-Za-z0-9_]+\})/.test(source))
    return { ok: false, problem: `'\${' must start a variable such as \${CRAWL_STUDIO_TOKEN}` };
  return { ok: true, parts };
}

/** Parts of a template the parser already accepted (the task was validated): a broken one reads as its text. */
export function templateParts(source: string): readonly TemplatePart[] {
  const t = parseTemplate(source);
  return t.ok ? t.parts : [{ text: source }];
}

export function valueNames(parts: readonly TemplatePart[]): string[] {
  return parts.flatMap((p) => ('value' in p ? [p.value] : []));
}

export function envNames(parts: readonly TemplatePart[]): string[] {
  return parts.flatMap((p) => ('env' in p ? [p.env] : []));
}

/** A value as the page gave it: text from HTML, or a JSON scalar (a JSON body keeps its type); {page} is a number. */
export type TemplateValue = string | number | boolean;

export type Values = Readonly<Record<string, TemplateValue>>;

/**
 * The template as text, each value passed through `encode` (e.g. encodeURIComponent for a URL). Variables are
 * left as `${NAME}`: a URL never takes one (the parser refuses them there), a label shows the name, not the value.
 */
export function renderText(
  parts: readonly TemplatePart[],
  values: Values,
  encode: (s: string) => string = (s) => s,
): string {
  let out = '';
  for (const p of parts) {
    if ('text' in p) out += p.text;
    else if ('value' in p) out += encode(String(values[p.value] ?? ''));
    else out += `\${${p.env}}`;
  }
  return out;
}
