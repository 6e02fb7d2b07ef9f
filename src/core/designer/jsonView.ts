import { memberSegment } from '../extract/json';

// A JSON response as the preview shows it: an HTML document of nested <details> (collapsible with no script, in
// the same sandboxed, script-less frame as an HTML page), one element per value carrying the value's normalized
// path. The page is prepared from this document like any page (its elements numbered), so a JSONPath's matches
// are highlighted and a click picks a value, by path.

/** The attribute holding a value's normalized path (`$['products'][0]`). */
export const PATH_ATTR = 'data-cs-path';

/** Values shown at most: a 5 MB document must not become a 50 MB frame; the rest is said, not shown. */
const MAX_VIEW_NODES = 20_000;

/** Levels open at first; deeper ones are one click away. */
const OPEN_LEVELS = 4;

const STYLE = `body{font:12px/1.5 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;margin:8px 8px 8px 20px;color:#1f2328;background:#fff}
details>div,.kids{padding-left:1.4em;border-left:1px dotted #c8c8c8;margin-left:.35em}
summary{cursor:pointer;list-style-position:outside}
.k{color:#0550ae}.s{color:#0a3069}.n{color:#953800}.b,.z{color:#8250df}.c{color:#6e7781}
.more{color:#6e7781;font-style:italic}`;

function esc(s: string): string {
  return s.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);
}

function scalar(v: unknown): string {
  if (typeof v === 'string') return `<span class="s">${esc(JSON.stringify(v))}</span>`;
  if (typeof v === 'number') return `<span class="n">${esc(String(v))}</span>`;
  if (typeof v === 'boolean') return `<span class="b">${v}</span>`;
  return '<span class="z">null</span>';
}

/** The document for `value`. */
export function jsonViewHtml(value: unknown): string {
  let budget = MAX_VIEW_NODES;
  const out: string[] = [];
  const walk = (v: unknown, path: string, label: string, depth: number): void => {
    budget--;
    const attr = ` ${PATH_ATTR}="${esc(path)}"`;
    if (v === null || typeof v !== 'object') {
      out.push(`<div${attr}>${label}${scalar(v)}</div>`);
      return;
    }
    const entries: [string, string, unknown][] = Array.isArray(v)
      ? v.map((x, i) => [`${path}[${i}]`, '', x])
      : Object.entries(v).map(([k, x]) => [
          path + memberSegment(k),
          `<span class="k">${esc(JSON.stringify(k))}</span>: `,
          x,
        ]);
    const [open, close] = Array.isArray(v) ? ['[', ']'] : ['{', '}'];
    const count = Array.isArray(v)
      ? `${entries.length} item${entries.length === 1 ? '' : 's'}`
      : `${entries.length} key${entries.length === 1 ? '' : 's'}`;
    if (entries.length === 0) {
      out.push(`<div${attr}>${label}${open}${close}</div>`);
      return;
    }
    out.push(
      `<details${attr}${depth < OPEN_LEVELS ? ' open' : ''}><summary>${label}${open} <span class="c">${count}</span></summary><div>`,
    );
    let shown = 0;
    for (const [p, l, x] of entries) {
      if (budget <= 0) break;
      walk(x, p, l, depth + 1);
      shown++;
    }
    if (shown < entries.length)
      out.push(
        `<div class="more">… ${entries.length - shown} more not shown (the preview shows ${MAX_VIEW_NODES.toLocaleString('en-US')} values)</div>`,
      );
    out.push(`</div>${close}</details>`);
  };
  walk(value, '$', '', 0);
  return `<!doctype html><html><head><style>${STYLE}</style></head><body class="cs-json">${out.join('')}</body></html>`;
}
