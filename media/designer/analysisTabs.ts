// The Items, Links and Problems tabs: what the task's rule extracts from the page shown, the links it follows or
// drops, and the task file's problems.

import { LINK_REASONS, type AnalysisView, type CellView } from '../../src/core/designer/protocol';
import { byId, el, icon } from '../shared/dom';
import { plural } from '../shared/format';
import { post } from './host';
import { clip } from './text';

function cellNode(c: CellView): HTMLElement {
  const td = el('td');
  if (c.state === 'missing') {
    td.appendChild(el('span', 'missing', 'cell-missing'));
    td.title = 'The selector matched nothing in this item';
    return td;
  }
  if (c.state === 'empty') {
    td.appendChild(el('span', Array.isArray(c.value) ? 'empty list' : 'empty', 'cell-empty'));
    return td;
  }
  const text = Array.isArray(c.value) ? c.value.join(' · ') : String(c.value);
  if (Array.isArray(c.value)) td.appendChild(el('span', `[${c.value.length}]`, 'list-count'));
  td.appendChild(document.createTextNode(clip(text, 300)));
  td.title = text.slice(0, 2000);
  return td;
}

export function renderItems(a: AnalysisView | null): void {
  const box = byId('items');
  box.replaceChildren();
  let rows = 0;
  const tables = a?.items ?? [];
  if (!a || tables.length === 0) {
    box.appendChild(
      el(
        'div',
        !a
          ? 'No analysis yet.'
          : a.rule.name
            ? `The rule '${a.rule.name}' extracts no items (it has no \`items\`).`
            : 'No rule applies.',
        'note',
      ),
    );
  }
  for (const t of tables) {
    const h = el('h3', `${t.type} `);
    h.appendChild(
      el('span', `${plural(t.total, 'item')}${t.scope ? ` · one per ${t.scope}` : ' · one per page'}`, 'muted'),
    );
    box.appendChild(h);
    const table = el('table', undefined, 'items');
    table.dataset.type = t.type;
    const head = el('tr');
    head.appendChild(el('th', '#'));
    for (const c of t.columns) head.appendChild(el('th', c));
    table.appendChild(head);
    t.rows.forEach((r, i) => {
      const tr = el('tr');
      tr.appendChild(el('td', String(i + 1), 'n'));
      for (const c of r.cells) tr.appendChild(cellNode(c));
      table.appendChild(tr);
      rows++;
    });
    box.appendChild(table);
    if (t.rows.length < t.total)
      box.appendChild(el('div', `Showing the first ${t.rows.length} of ${t.total}.`, 'note'));
  }
  byId('items-count').textContent = String(tables.reduce((n, t) => n + t.total, 0));
  box.dataset.rows = String(rows);
}

export function renderLinks(a: AnalysisView | null): void {
  const box = byId('links');
  box.replaceChildren();
  let kept = 0;
  for (const f of a?.links ?? []) {
    kept += f.keptTotal;
    const h = el('h3', f.index < 0 ? '' : `follow[${f.index}] `);
    h.appendChild(el('code', f.selector));
    h.appendChild(
      el('span', ` → ${f.to ?? 'rule by match'} · ${f.keptTotal} kept, ${f.droppedTotal} dropped`, 'muted'),
    );
    box.appendChild(h);
    const keptBox = el('details');
    keptBox.open = true;
    keptBox.appendChild(el('summary', `Kept (${f.keptTotal})`));
    const ul = el('ul', undefined, 'links');
    for (const l of f.kept) {
      const li = el('li');
      if (l.method) li.appendChild(el('span', `${l.method} `, 'method'));
      // Opens the page in the preview: the request itself (its method, body, series) when it has a key.
      const a = el('a', l.url, 'open-link');
      a.href = '#';
      a.title = l.body ? `${l.method} ${l.url}\n${l.body}` : `Open ${l.url} in the preview`;
      a.addEventListener('click', (e) => {
        e.preventDefault();
        post({ type: 'openPage', url: l.url, ...(l.key ? { key: l.key } : {}) });
      });
      li.appendChild(a);
      if (l.body) li.appendChild(el('span', `  ${clip(l.body, 120)}`, 'muted body'));
      li.appendChild(el('span', `  → ${l.rule}`, 'muted'));
      ul.appendChild(li);
    }
    keptBox.appendChild(ul);
    box.appendChild(keptBox);
    if (f.droppedTotal > 0) {
      const dropBox = el('details');
      dropBox.appendChild(el('summary', `Dropped (${f.droppedTotal})`));
      const dl = el('ul', undefined, 'links');
      for (const d of f.dropped) {
        const li = el('li');
        li.appendChild(
          el('span', `${LINK_REASONS[d.reason] ?? d.reason}${d.detail ? ` (${d.detail})` : ''}: `, 'reason'),
        );
        li.appendChild(document.createTextNode(`${d.method ? `${d.method} ` : ''}${d.url}`));
        dl.appendChild(li);
      }
      dropBox.appendChild(dl);
      box.appendChild(dropBox);
    }
  }
  if ((a?.links.length ?? 0) === 0)
    box.appendChild(
      el('div', a?.rule.name ? `The rule '${a.rule.name}' follows no links.` : 'No rule applies.', 'note'),
    );
  if (a?.robotsPending)
    box.appendChild(el('div', 'Reading robots.txt… links it disallows will move to Dropped.', 'note'));
  byId('links-count').textContent = String(kept);
}

export function renderProblems(a: AnalysisView | null): void {
  const box = byId('problems');
  box.replaceChildren();
  const diags = a?.diagnostics ?? [];
  for (const d of diags) {
    const row = el('div', undefined, 'diag');
    row.appendChild(icon(d.severity === 'error' ? 'error' : 'warning'));
    row.appendChild(el('span', `${d.line}:${d.column}`, 'muted'));
    row.appendChild(el('span', `${d.path ? d.path + ': ' : ''}${d.message}`));
    box.appendChild(row);
  }
  for (const p of a?.problems ?? []) {
    const row = el('div', undefined, 'diag');
    row.appendChild(icon('warning'));
    row.appendChild(el('span', `item not stored: ${p}`));
    box.appendChild(row);
  }
  const n = diags.length + (a?.problems.length ?? 0);
  if (n === 0) box.appendChild(el('div', 'No problems.', 'note'));
  byId('problems-count').textContent = String(n);
}
