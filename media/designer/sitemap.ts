// A sitemap shown in place of the page (its entries, each with the rule a crawl gives it or why it is dropped),
// and the tabs' summary of where its entries go.

import { LINK_REASONS, type PreviewState } from '../../src/core/designer/protocol';
import { byId, el } from '../shared/dom';
import { plural } from '../shared/format';
import { post } from './host';

const SITEMAP_FORMATS: Record<string, string> = {
  urlset: 'Sitemap',
  sitemapindex: 'Sitemap index',
  text: 'Text sitemap',
  robots: 'robots.txt',
};

/** A sitemap in place of the page: its entries, each with the rule a crawl gives it or why it is dropped. */
export function renderSitemap(s: PreviewState): void {
  const box = byId('sitemap');
  const sm = s.sitemap;
  box.hidden = !sm;
  byId('page-frame').style.display = sm ? 'none' : '';
  box.replaceChildren();
  if (!sm) return;
  const dropped = Object.values(sm.dropped).reduce((a, b) => a + b, 0);
  const h = el('h3', `${SITEMAP_FORMATS[sm.format] ?? sm.format} `);
  h.appendChild(
    el(
      'span',
      `${plural(sm.total, 'entry')}${sm.truncated ? ' (the first ones: the preview stops there)' : ''} · ${sm.kept} to crawl · ${dropped} dropped`,
      'muted',
    ),
  );
  box.appendChild(h);
  box.appendChild(el('div', `${sm.settings}. Click an entry to preview it.`, 'note'));
  const table = el('table', undefined, 'items');
  table.id = 'sitemap-entries';
  const head = el('tr');
  for (const c of [
    '#',
    sm.format === 'sitemapindex' || sm.format === 'robots' ? 'sitemap' : 'page',
    'lastmod',
    'a crawl…',
  ])
    head.appendChild(el('th', c));
  table.appendChild(head);
  sm.entries.forEach((e, i) => {
    const tr = el('tr');
    tr.dataset.kind = e.kind;
    tr.appendChild(el('td', String(i + 1), 'n'));
    const u = el('td');
    const link = el('span', e.url, 'entry');
    link.title = e.url;
    link.addEventListener('click', () => post({ type: 'openPage', url: e.url }));
    u.appendChild(link);
    if (e.alternates) u.appendChild(el('span', ` +${e.alternates} alternates`, 'muted'));
    tr.appendChild(u);
    tr.appendChild(el('td', e.lastmod ?? ''));
    if (e.dropped) tr.appendChild(el('td', `drops it: ${e.dropped}`, 'reason'));
    else tr.appendChild(el('td', e.kind === 'sitemap' ? 'reads this sitemap next' : `→ rule ${e.rule}`));
    table.appendChild(tr);
  });
  box.appendChild(table);
  if (sm.entries.length < sm.total)
    box.appendChild(el('div', `Showing the first ${sm.entries.length} of ${sm.total}.`, 'note'));
}

/** The tabs while a sitemap is shown: where its entries go, by rule and by drop reason. */
export function renderSitemapSummary(s: PreviewState): void {
  const sm = s.sitemap!;
  const items = byId('items');
  items.replaceChildren();
  items.appendChild(
    el('div', 'A sitemap has no items of its own: click one of its pages to preview what its rule extracts.', 'note'),
  );
  items.dataset.rows = '0';
  byId('items-count').textContent = '0';
  const links = byId('links');
  links.replaceChildren();
  const byRule = new Map<string, number>();
  for (const e of sm.entries)
    if (!e.dropped) byRule.set(e.rule ?? 'sitemaps read next', (byRule.get(e.rule ?? 'sitemaps read next') ?? 0) + 1);
  const ul = el('ul', undefined, 'links');
  for (const [rule, n] of byRule) ul.appendChild(el('li', `${rule}: ${n}`));
  for (const [reason, n] of Object.entries(sm.dropped)) {
    const li = el('li');
    li.appendChild(el('span', `dropped (${LINK_REASONS[reason as keyof typeof LINK_REASONS] ?? reason}): `, 'reason'));
    li.appendChild(document.createTextNode(String(n)));
    ul.appendChild(li);
  }
  links.appendChild(ul);
  byId('links-count').textContent = String(sm.kept);
}
