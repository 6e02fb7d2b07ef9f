import schema from './crawl-task.schema.json';

// The task-file reference, generated from the JSON Schema so the two never disagree (docs/task-file.md is this
// function's output; a test fails when the committed file is stale).

interface Node {
  description?: string;
  /** Markdown lines printed under the section's description (the reference only; editors show `description`). */
  details?: string[];
  type?: string | string[];
  enum?: unknown[];
  properties?: Record<string, Node>;
  additionalProperties?: Node | boolean;
  items?: Node;
  required?: string[];
  $ref?: string;
  then?: Node;
  minimum?: number;
  maximum?: number;
  pattern?: string;
  errorMessage?: string;
}

const root = schema as unknown as Node & { definitions: Record<string, Node> };

function deref(n: Node): Node {
  if (!n.$ref) return n;
  const name = n.$ref.replace('#/definitions/', '');
  const target = root.definitions[name]!;
  return { ...target, ...n, $ref: undefined, description: n.description ?? target.description };
}

function typeOf(n0: Node): string {
  const n = deref(n0);
  if (n.enum) return n.enum.map((e) => `\`${String(e)}\``).join(' \\| ');
  if (n0.$ref === '#/definitions/duration') return 'duration (`500ms`, `10s`, `2m` or ms)';
  if (n0.$ref === '#/definitions/size') return 'size (`512KB`, `5MB` or bytes)';
  const types = ([] as string[]).concat(n.type ?? 'object');
  if (n.then?.properties) return `${types.join(' or ')}`;
  if (types.includes('array') && n.items) return `list of ${typeOf(n.items)}`;
  return types.join(' or ');
}

function limits(n: Node): string {
  const out: string[] = [];
  if (n.minimum !== undefined) out.push(`≥ ${n.minimum}`);
  if (n.maximum !== undefined) out.push(`≤ ${n.maximum}`);
  if (n.errorMessage && n.pattern) out.push(n.errorMessage);
  return out.length ? ` (${out.join(', ')})` : '';
}

function section(title: string, path: string, n0: Node, out: string[], depth: number): void {
  const n = deref(n0);
  const obj = n.then?.properties
    ? n.then
    : n.items && deref(n.items).properties
      ? deref(n.items)
      : n.items && deref(n.items).then
        ? deref(n.items).then!
        : n;
  const props = obj?.properties;
  const mapOf = typeof n.additionalProperties === 'object' ? deref(n.additionalProperties) : null;
  out.push(`${'#'.repeat(Math.min(depth, 6))} ${title}`, '');
  if (n.description) out.push(n.description, '');
  if (n.details) out.push(...n.details, '');
  if (props) {
    const required = new Set(obj.required ?? []);
    out.push('| field | type | required | description |', '| --- | --- | --- | --- |');
    for (const [k, v] of Object.entries(props)) {
      const d = deref(v);
      const unit = v.$ref === '#/definitions/duration' || v.$ref === '#/definitions/size';
      out.push(
        `| \`${k}\` | ${typeOf(v)}${unit ? '' : limits(d)} | ${required.has(k) ? 'yes' : ''} | ${(d.description ?? '').replace(/\n/g, ' ').replace(/\|/g, '\\|')} |`,
      );
    }
    out.push('');
    for (const [k, v] of Object.entries(props)) {
      const d = deref(v);
      const nested =
        d.properties ||
        d.then?.properties ||
        (d.items && (deref(d.items).properties || deref(d.items).then?.properties)) ||
        (typeof d.additionalProperties === 'object' && deref(d.additionalProperties).then);
      if (nested) section(`\`${path}${k}\``, `${path}${k}.`, v, out, depth + 1);
    }
  } else if (mapOf?.then?.properties) {
    section('A field: a CSS selector (its text), or an object with these fields', path, mapOf, out, depth + 1);
  }
}

export function schemaReference(): string {
  const out = [
    '# Task file reference',
    '',
    '<!-- Generated from src/core/task/crawl-task.schema.json by `npm run docs`. Do not edit by hand. -->',
    '',
  ];
  section('Top level', '', root, out, 2);
  return out.join('\n').replace(/\n{3,}/g, '\n\n') + '\n';
}
