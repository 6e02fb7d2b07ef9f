// The Data tab: each path of the page's structured data (JSON-LD, microdata, OpenGraph) with its value.

import type { StructuredEntry } from '../../src/core/designer/protocol';
import { byId, el } from '../shared/dom';
import { plural } from '../shared/format';
import { button } from './button';
import { post } from './host';

const SOURCES: readonly { readonly source: StructuredEntry['source']; readonly label: string }[] = [
  { source: 'jsonld', label: 'JSON-LD' },
  { source: 'microdata', label: 'Microdata' },
  { source: 'opengraph', label: 'OpenGraph' },
];

/** The Data tab: each path of the page's structured data with its value; Add writes it as a field. */
export function renderStructured(entries: readonly StructuredEntry[] | undefined): void {
  const box = byId('data');
  box.replaceChildren();
  const list = entries ?? [];
  if (list.length === 0)
    box.appendChild(
      el('div', entries ? 'This page carries no JSON-LD, microdata or OpenGraph tags.' : 'No page yet.', 'note'),
    );
  else
    box.appendChild(
      el(
        'div',
        'Add writes the path as a field: into the field at the cursor, else as a new field of the item the cursor is in (or of the rule shown).',
        'note',
      ),
    );
  for (const { source, label } of SOURCES) {
    const rows = list.filter((e) => e.source === source);
    if (rows.length === 0) continue;
    const h = el('h3', `${label} `);
    h.appendChild(el('span', plural(rows.length, 'value'), 'muted'));
    box.appendChild(h);
    // Not `items`: what reads the Items tab's tables (tests, the acknowledgement) must not count these.
    const table = el('table', undefined, 'structured');
    table.dataset.source = source;
    for (const e of rows) {
      const tr = el('tr');
      const path = el('td');
      path.appendChild(el('code', e.path));
      tr.appendChild(path);
      const value = el('td', e.value, e.value === '' ? 'cell-empty' : undefined);
      value.title = e.value;
      tr.appendChild(value);
      const add = el('td', undefined, 'add');
      const b = button('Add', 'add', () => post({ type: 'insertField', source: e.source, path: e.path }), true);
      b.title = `Add as a field: { ${e.source}: ${e.path} }`;
      add.appendChild(b);
      tr.appendChild(add);
      table.appendChild(tr);
    }
    box.appendChild(table);
  }
  byId('data-count').textContent = String(list.length);
  box.dataset.rows = String(list.length);
}
