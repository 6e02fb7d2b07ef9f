import type { BodyTemplate } from '../task/model';
import { templateParts, type TemplatePart, type Values } from './template';
import { mayUse } from '../task/variables';

// A request body as a job carries it: the exact text to send, except that each `${CRAWL_STUDIO_*}` is a hole the
// worker fills as it sends. `parts` alternate: text, a variable's name, text, … (always an odd count), so the
// holes are where the author wrote them and nowhere else, whatever the page's values hold. A body in Redis
// therefore never holds a secret, and two jobs with the same body have the same parts (deduplication).

export interface JobBody {
  readonly type: 'form' | 'json';
  /** Even indices: text as sent; odd indices: names of variables, filled in (encoded for `type`) by the worker. */
  readonly parts: readonly string[];
}

export const CONTENT_TYPES: Readonly<Record<JobBody['type'], string>> = {
  form: 'application/x-www-form-urlencoded',
  json: 'application/json',
};

/** application/x-www-form-urlencoded, as a browser encodes a form (spaces as '+'). */
export function formEncode(s: string): string {
  return new URLSearchParams([['', s]]).toString().slice(1);
}

function jsonEscape(s: string): string {
  return JSON.stringify(s).slice(1, -1);
}

class Parts {
  readonly parts: string[] = [''];
  text(s: string): void {
    this.parts[this.parts.length - 1] += s;
  }
  hole(name: string): void {
    this.parts.push(name, '');
  }
}

/** Form pairs already read from a page (a form's inputs): sent as they are, never templates. */
export type FormPairs = readonly (readonly [name: string, value: string])[];

/**
 * The body of `template` with `values` in: form fields (after `pagePairs`, a form's own inputs, minus those the
 * template fills) or a JSON document. A JSON string that is one value alone (`'{page}'`) takes the value's type.
 */
export function renderBody(template: BodyTemplate, values: Values, pagePairs: FormPairs = []): JobBody {
  const out = new Parts();
  if (template.kind === 'form') {
    const ours = new Set(Object.keys(template.fields));
    let first = true;
    const pair = (name: string, emit: () => void) => {
      if (!first) out.text('&');
      first = false;
      out.text(`${formEncode(name)}=`);
      emit();
    };
    for (const [name, value] of pagePairs) if (!ours.has(name)) pair(name, () => out.text(formEncode(value)));
    for (const [name, source] of Object.entries(template.fields))
      pair(name, () => emitParts(out, templateParts(source), values, formEncode));
    return { type: 'form', parts: out.parts };
  }
  emitJson(out, template.json, values);
  return { type: 'json', parts: out.parts };
}

function emitParts(out: Parts, parts: readonly TemplatePart[], values: Values, encode: (s: string) => string): void {
  for (const p of parts) {
    if ('text' in p) out.text(encode(p.text));
    else if ('value' in p) out.text(encode(String(values[p.value] ?? '')));
    else out.hole(p.env);
  }
}

function emitJson(out: Parts, v: unknown, values: Values): void {
  if (typeof v === 'string') {
    const parts = templateParts(v);
    const only = parts.length === 1 ? parts[0]! : null;
    if (only && 'value' in only) {
      out.text(JSON.stringify(values[only.value] ?? null));
      return;
    }
    out.text('"');
    emitParts(out, parts, values, jsonEscape);
    out.text('"');
  } else if (Array.isArray(v)) {
    out.text('[');
    v.forEach((x, i) => {
      if (i > 0) out.text(',');
      emitJson(out, x, values);
    });
    out.text(']');
  } else if (v !== null && typeof v === 'object') {
    out.text('{');
    Object.entries(v).forEach(([k, x], i) => {
      if (i > 0) out.text(',');
      out.text(`${JSON.stringify(k)}:`);
      emitJson(out, x, values);
    });
    out.text('}');
  } else {
    out.text(JSON.stringify(v ?? null));
  }
}

/** The body for people (Show Job Data, the store's page record, the preview): variables as `${NAME}`. */
export function bodyLabel(body: JobBody): string {
  return body.parts.map((p, i) => (i % 2 === 0 ? p : `\${${p}}`)).join('');
}

/** The body as sent, variables filled in from `env` (only those a request may use: core/task/variables.ts). Holds secrets: never log it. */
export function expandBody(
  body: JobBody,
  env: Readonly<Record<string, string | undefined>>,
): { readonly text: string; readonly missing: readonly string[] } {
  const encode = body.type === 'form' ? formEncode : jsonEscape;
  const missing: string[] = [];
  let text = '';
  body.parts.forEach((p, i) => {
    if (i % 2 === 0) {
      text += p;
      return;
    }
    const v = mayUse(p, 'request') ? env[p] : undefined;
    if (v === undefined) missing.push(p);
    else text += encode(v);
  });
  return { text, missing };
}

/** Whether a job's body is well formed (it came through Redis: a job another version wrote, or a hand-made one). */
export function isJobBody(v: unknown): v is JobBody {
  const b = v as Partial<JobBody> | null;
  return (
    !!b &&
    (b.type === 'form' || b.type === 'json') &&
    Array.isArray(b.parts) &&
    b.parts.length % 2 === 1 &&
    b.parts.every((p) => typeof p === 'string')
  );
}
