// The crawl preview's webview: toolbar, rendered page with highlights and the picker, items / links / problems /
// the page's structured data.
// Everything shown that comes from the page or the task file is set as text (never as HTML): this document runs
// scripts, the page it shows must not. The page itself goes into an iframe sandboxed without allow-scripts,
// already made inert by the extension; this script reaches into it (same origin through allow-same-origin) to
// mark highlights and to turn clicks into picks.

import '@vscode-elements/elements/dist/vscode-badge/index.js';
import '@vscode-elements/elements/dist/vscode-button/index.js';
import '@vscode-elements/elements/dist/vscode-checkbox/index.js';
import '@vscode-elements/elements/dist/vscode-option/index.js';
import '@vscode-elements/elements/dist/vscode-single-select/index.js';
import '@vscode-elements/elements/dist/vscode-split-layout/index.js';
import '@vscode-elements/elements/dist/vscode-tab-header/index.js';
import '@vscode-elements/elements/dist/vscode-tab-panel/index.js';
import '@vscode-elements/elements/dist/vscode-tabs/index.js';
import '@vscode-elements/elements/dist/vscode-textfield/index.js';
import css from './style.css';
import {
  LINK_REASONS,
  type AnalysisView,
  type CellView,
  type HostMessage,
  type PreviewState,
  type StructuredEntry,
  type SuggestionView,
} from '../../src/core/designer/protocol';

const vscode = acquireVsCodeApi();
const post = (msg: unknown) => vscode.postMessage(msg);

const style = document.createElement('style');
style.textContent = css;
document.head.appendChild(style);

// ---------------------------------------------------------------------------------------------------------
// Static skeleton (no dynamic content here)

const app = document.getElementById('app')!;
app.innerHTML = `
<div class="toolbar">
  <vscode-single-select class="pages" id="pages" aria-label="Page"></vscode-single-select>
  <vscode-textfield class="grow" id="url" placeholder="Any URL: https://…" aria-label="URL"></vscode-textfield>
  <vscode-button id="open" icon="arrow-right">Open</vscode-button>
  <vscode-button id="refetch" secondary icon="refresh" title="Fetch the page again (the preview otherwise uses its cached copy)">Refetch</vscode-button>
  <vscode-button id="cancel" secondary icon="close" hidden>Cancel</vscode-button>
  <label for="rules">Rule</label>
  <vscode-single-select class="rules" id="rules" aria-label="Rule"></vscode-single-select>
  <vscode-checkbox id="browser" label="Browser" title="Render the page in a headless browser first, as a worker does for a rule with 'browser' (its scripts run there, never here)"></vscode-checkbox>
  <vscode-checkbox id="images" label="Images" title="Load images from the page's origin (off: nothing is loaded from the network)"></vscode-checkbox>
  <vscode-button id="fixture" secondary icon="beaker" title="Save the page and what the task extracts from it as a fixture">Save as Fixture</vscode-button>
</div>
<div class="status" id="status"></div>
<div class="banner" id="banner" hidden></div>
<vscode-split-layout split="horizontal" initial-handle-position="55%" reset-on-dbl-click>
  <div slot="start" class="pane">
    <div class="hl-bar" id="hl-bar"></div>
    <div class="frame-wrap">
      <iframe id="page-frame" sandbox="allow-same-origin" title="Rendered page (scripts disabled)"></iframe>
      <div class="frame-msg" id="frame-msg">Pick a page: a start URL, a cached page, or any URL.</div>
      <div class="sitemap" id="sitemap" hidden></div>
    </div>
    <div class="pick-bar" id="pick-bar" hidden></div>
  </div>
  <div slot="end" class="results">
    <!-- vscode-tabs gives its headers ids of its own: they are told apart by data-tab. -->
    <vscode-tabs id="tabs" selected-index="0">
      <vscode-tab-header slot="header" data-tab="items">Items <vscode-badge variant="counter" id="items-count">0</vscode-badge></vscode-tab-header>
      <vscode-tab-panel><div class="tab-body" id="items"></div></vscode-tab-panel>
      <vscode-tab-header slot="header" data-tab="links">Links <vscode-badge variant="counter" id="links-count">0</vscode-badge></vscode-tab-header>
      <vscode-tab-panel><div class="tab-body" id="links"></div></vscode-tab-panel>
      <vscode-tab-header slot="header" data-tab="problems">Problems <vscode-badge variant="counter" id="problems-count">0</vscode-badge></vscode-tab-header>
      <vscode-tab-panel><div class="tab-body" id="problems"></div></vscode-tab-panel>
      <vscode-tab-header slot="header" data-tab="data" title="Structured data the page carries: JSON-LD, microdata, OpenGraph">Data <vscode-badge variant="counter" id="data-count">0</vscode-badge></vscode-tab-header>
      <vscode-tab-panel><div class="tab-body" id="data"></div></vscode-tab-panel>
    </vscode-tabs>
  </div>
</vscode-split-layout>`;

const $ = <T extends HTMLElement = HTMLElement>(id: string) => document.getElementById(id) as T;
interface ValueElement extends HTMLElement {
  value: string;
  checked?: boolean;
}
const pages = $<ValueElement>('pages');
const url = $<ValueElement>('url');
const rules = $<ValueElement>('rules');
const images = $<ValueElement>('images');
const browserBox = $<ValueElement>('browser');
const frame = $<HTMLIFrameElement>('page-frame');
const frameMsg = $('frame-msg');

// ---------------------------------------------------------------------------------------------------------
// Small DOM helpers: text only

function el<K extends keyof HTMLElementTagNameMap>(tag: K, text?: string, cls?: string): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  if (text !== undefined) e.textContent = text;
  if (cls) e.className = cls;
  return e;
}

function icon(name: string): HTMLElement {
  return el('span', undefined, `codicon codicon-${name}`);
}

function button(label: string, iconName: string, onClick: () => void, secondary = false): HTMLElement {
  const b = document.createElement('vscode-button');
  b.textContent = label;
  b.setAttribute('icon', iconName);
  if (secondary) b.setAttribute('secondary', '');
  b.addEventListener('click', onClick);
  return b;
}

function clear(node: HTMLElement): void {
  while (node.firstChild) node.removeChild(node.firstChild);
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

function ago(iso: string): string {
  const s = Math.max(0, (Date.now() - Date.parse(iso)) / 1000);
  if (s < 60) return 'just now';
  if (s < 3600) return `${Math.round(s / 60)} min ago`;
  if (s < 86400) return `${Math.round(s / 3600)} h ago`;
  return `${Math.round(s / 86400)} d ago`;
}

function kb(n: number): string {
  return n < 1024 ? `${n} B` : n < 1024 * 1024 ? `${(n / 1024).toFixed(1)} KB` : `${(n / 1024 / 1024).toFixed(1)} MB`;
}

// ---------------------------------------------------------------------------------------------------------
// State

let state: PreviewState | null = null;
let seq = 0;
let frameKey = '';
let frameReady = false;
let frameIndex = new Map<number, Element>();
let highlighted: Element[] = [];
let lastHighlightKey = '';

/** While the toolbar is being filled from the state, its change events are not the person's. */
let syncing = false;

function setOptions(select: ValueElement, options: Array<{ value: string; label: string }>, value: string): void {
  const key = JSON.stringify(options);
  if (select.dataset.options !== key) {
    select.dataset.options = key;
    clear(select);
    for (const o of options) {
      const opt = document.createElement('vscode-option');
      opt.setAttribute('value', o.value);
      opt.textContent = o.label;
      select.appendChild(opt);
    }
  }
  if (select.value !== value) select.value = value;
}

function render(s: PreviewState): void {
  state = s;
  syncing = true;
  try {
    // A request that is not a plain GET is listed (and opened) by its key.
    const choices = s.choices.map((c) => ({ value: c.key ?? c.url, label: c.label }));
    const current = s.page?.key ?? s.page?.url ?? '';
    if (current && !choices.some((c) => c.value === current))
      choices.unshift({ value: current, label: s.page?.method ? `${s.page.method} ${s.page.url}` : current });
    if (!current) choices.unshift({ value: '', label: 'Choose a page…' });
    setOptions(pages, choices, current);
    const a = s.analysis;
    const ruleOptions = [
      { value: '', label: a?.rule.auto && a.rule.name ? `auto (${a.rule.name})` : 'auto' },
      ...(a?.rule.names ?? []).map((n) => ({ value: n, label: n })),
    ];
    setOptions(rules, ruleOptions, a && !a.rule.auto ? (a.rule.name ?? '') : '');
    if (images.checked !== s.images) images.checked = s.images;
    if (browserBox.checked !== s.browser) browserBox.checked = s.browser;
  } finally {
    syncing = false;
  }
  $('cancel').hidden = !s.loading;
  renderStatus(s);
  renderBanner(s);
  renderFrameMessage(s);
  renderSitemap(s);
  if (s.sitemap) renderSitemapSummary(s);
  else {
    renderItems(s.analysis);
    renderLinks(s.analysis);
  }
  renderProblems(s.analysis);
  renderStructured(s.structured);
  renderHighlightBar(s.analysis);
  applyHighlight(s.analysis);
}

function renderStatus(s: PreviewState): void {
  const status = $('status');
  const parts: string[] = [];
  if (s.loading) parts.push(`${s.loading}…`);
  if (s.page) {
    if (s.page.method)
      parts.push(
        `${s.page.method}${s.page.body ? ` ${s.page.body.length > 80 ? s.page.body.slice(0, 80) + '…' : s.page.body}` : ''}`,
      );
    if (s.page.json) parts.push('JSON');
    parts.push(
      `HTTP ${s.page.status}`,
      kb(s.page.bytes),
      s.page.fromCache ? `cached copy, fetched ${ago(s.page.fetchedAt)}` : `fetched ${ago(s.page.fetchedAt)}`,
    );
    if (s.page.finalUrl !== s.page.url) parts.push(`redirected to ${s.page.finalUrl}`);
    if (s.page.actions?.length) parts.push(`actions: ${s.page.actions.join('; ')}`);
  }
  if (s.access) parts.push(s.access);
  if (s.pageWhy) parts.push(s.pageWhy);
  const a = s.analysis;
  if (s.sitemap) parts.push(s.sitemap.settings);
  else if (a?.rule.name) parts.push(`rule ${a.rule.name} (${a.rule.reason})`);
  if (a && s.page) parts.push(`updated in ${Math.round(a.timings.totalMs)} ms`);
  status.textContent = parts.join(' · ');
  status.title = status.textContent;
}

function renderBanner(s: PreviewState): void {
  const banner = $('banner');
  const a = s.analysis;
  const errors = a?.diagnostics.filter((d) => d.severity === 'error').length ?? 0;
  let text = '';
  let cls = 'banner';
  if (s.pageError) {
    text = s.pageError;
    cls += ' error';
  } else if (a?.stale) {
    text = `The task file has ${plural(errors, 'error')} (see Problems): showing what its last valid version extracts.`;
  } else if (errors > 0) {
    text = `The task file has ${plural(errors, 'error')}: see Problems.`;
    cls += ' error';
  } else if (s.page?.warnings?.length) {
    text = s.page.warnings.map((w) => `Warning: ${w}`).join('\n');
  }
  banner.className = cls;
  banner.textContent = text;
  banner.hidden = text === '';
}

function renderFrameMessage(s: PreviewState): void {
  if (s.loading && !s.page) {
    frameMsg.textContent = `${s.loading}…`;
    frameMsg.hidden = false;
  } else if (s.pageError && !s.page) {
    frameMsg.textContent = s.pageError;
    frameMsg.hidden = false;
  } else if (!s.page) {
    frameMsg.textContent = 'Pick a page: a start URL, a cached page, or any URL.';
    frameMsg.hidden = false;
  } else {
    frameMsg.hidden = true;
  }
}

const SITEMAP_FORMATS: Record<string, string> = {
  urlset: 'Sitemap',
  sitemapindex: 'Sitemap index',
  text: 'Text sitemap',
  robots: 'robots.txt',
};

/** A sitemap in place of the page: its entries, each with the rule a crawl gives it or why it is dropped. */
function renderSitemap(s: PreviewState): void {
  const box = $('sitemap');
  const sm = s.sitemap;
  box.hidden = !sm;
  frame.style.display = sm ? 'none' : '';
  clear(box);
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
function renderSitemapSummary(s: PreviewState): void {
  const sm = s.sitemap!;
  const items = $('items');
  clear(items);
  items.appendChild(
    el('div', 'A sitemap has no items of its own: click one of its pages to preview what its rule extracts.', 'note'),
  );
  items.dataset.rows = '0';
  $('items-count').textContent = '0';
  const links = $('links');
  clear(links);
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
  $('links-count').textContent = String(sm.kept);
}

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
  td.appendChild(document.createTextNode(text.length > 300 ? text.slice(0, 300) + '…' : text));
  td.title = text.slice(0, 2000);
  return td;
}

function renderItems(a: AnalysisView | null): void {
  const box = $('items');
  clear(box);
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
  $('items-count').textContent = String(tables.reduce((n, t) => n + t.total, 0));
  box.dataset.rows = String(rows);
}

function renderLinks(a: AnalysisView | null): void {
  const box = $('links');
  clear(box);
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
      if (l.body)
        li.appendChild(el('span', `  ${l.body.length > 120 ? l.body.slice(0, 120) + '…' : l.body}`, 'muted body'));
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
  $('links-count').textContent = String(kept);
}

function renderProblems(a: AnalysisView | null): void {
  const box = $('problems');
  clear(box);
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
  $('problems-count').textContent = String(n);
}

const SOURCES: readonly { readonly source: StructuredEntry['source']; readonly label: string }[] = [
  { source: 'jsonld', label: 'JSON-LD' },
  { source: 'microdata', label: 'Microdata' },
  { source: 'opengraph', label: 'OpenGraph' },
];

/** The Data tab: each path of the page's structured data with its value; Add writes it as a field. */
function renderStructured(entries: readonly StructuredEntry[] | undefined): void {
  const box = $('data');
  clear(box);
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
  $('data-count').textContent = String(list.length);
  box.dataset.rows = String(list.length);
}

function renderHighlightBar(a: AnalysisView | null): void {
  const bar = $('hl-bar');
  clear(bar);
  const h = a?.highlight;
  if (!h) {
    bar.appendChild(
      el(
        'span',
        'Put the cursor on a selector in the task file to highlight its matches; click an element to get a selector for it.',
        'label',
      ),
    );
    return;
  }
  bar.appendChild(el('span', h.label, 'label'));
  if (h.selector) bar.appendChild(el('code', h.selector));
  if (h.error) {
    bar.appendChild(el('span', h.error, 'cell-missing'));
    return;
  }
  const c = el('span', `${h.count} match${h.count === 1 ? '' : 'es'}`, 'count');
  c.id = 'hl-count';
  bar.appendChild(c);
  if (h.scopes) bar.appendChild(el('span', `in ${h.scopes.matched} of ${h.scopes.total} items`, 'label'));
}

function renderSuggestion(view: SuggestionView | null, error: string | null): void {
  const bar = $('pick-bar');
  clear(bar);
  if (error) {
    bar.appendChild(el('span', error, 'cell-missing'));
    bar.hidden = false;
    return;
  }
  if (!view) {
    bar.hidden = true;
    return;
  }
  const s = view.suggestion;
  bar.appendChild(el('span', `Picked ${s.element} →`, 'label'));
  const code = el('code', s.selector, 'sel');
  code.id = 'suggested';
  bar.appendChild(code);
  bar.appendChild(
    el(
      'span',
      `${s.count} match${s.count === 1 ? '' : 'es'}${s.kind === 'scoped' ? ' in its item' : ''}${s.multiple ? ' (a list: all: true)' : ''}`,
      'count',
    ),
  );
  const insert = button(
    view.target === 'the cursor' ? 'Insert at the cursor' : `Insert into ${view.target}`,
    'insert',
    () => post({ type: 'insert', selector: s.selector, all: s.multiple }),
  );
  insert.id = 'insert';
  bar.appendChild(insert);
  bar.appendChild(button('Copy', 'copy', () => post({ type: 'copy', text: s.selector }), true));
  const alts = [
    s.unique.selector !== s.selector
      ? { label: 'only this one', sel: s.unique.selector, count: s.unique.count, all: false }
      : null,
    s.list && s.list.selector !== s.selector
      ? { label: 'the list', sel: s.list.selector, count: s.list.count, all: true }
      : null,
    s.scoped && s.scoped.selector !== s.selector
      ? { label: 'inside its item', sel: s.scoped.selector, count: s.scoped.count, all: false }
      : null,
  ].filter((x): x is NonNullable<typeof x> => x !== null);
  for (const alt of alts) {
    const wrap = el('span', `${alt.label}: `, 'alt');
    const c = el('code', alt.sel);
    c.title = `${alt.count} match${alt.count === 1 ? '' : 'es'}`;
    wrap.appendChild(c);
    bar.appendChild(wrap);
    bar.appendChild(button('Insert', 'insert', () => post({ type: 'insert', selector: alt.sel, all: alt.all }), true));
  }
  // The same value from the page's structured data, steadier than the markup: offered as a field of its own.
  for (const e of view.structured ?? []) {
    const wrap = el('span', `or ${e.source}: `, 'alt');
    const c = el('code', e.path);
    c.title = e.value;
    wrap.appendChild(c);
    bar.appendChild(wrap);
    const add = button('Add', 'add', () => post({ type: 'insertField', source: e.source, path: e.path }), true);
    add.title = `Add as a field: { ${e.source}: ${e.path} }`;
    add.classList.add('add-structured');
    bar.appendChild(add);
  }
  bar.hidden = false;
}

// ---------------------------------------------------------------------------------------------------------
// The rendered page

const FRAME_STYLE_ID = '__crawl_studio_preview__';

/** Highlight colours from the editor's theme (the frame's document does not see the webview's variables). */
function frameCss(): string {
  const v = (name: string, fallback: string) =>
    getComputedStyle(document.documentElement).getPropertyValue(name).trim() || fallback;
  const match = v('--vscode-editor-findMatchHighlightBackground', 'rgba(234, 92, 0, 0.33)');
  const border = v('--vscode-editorOverviewRuler-findMatchForeground', '#d18616');
  const focus = v('--vscode-focusBorder', '#007fd4');
  return `[data-cs-hl]{outline:2px solid ${border} !important;outline-offset:1px !important;background-color:${match} !important}
[data-cs-hover]{outline:1px dashed ${focus} !important;cursor:crosshair !important}
[data-cs-picked]{outline:2px solid ${focus} !important;outline-offset:2px !important}
a,button,input,select,textarea,label{cursor:crosshair !important}`;
}

function setFrame(html: string | null, key: string): void {
  frameKey = key;
  frameReady = false;
  frameIndex = new Map();
  highlighted = [];
  lastHighlightKey = '';
  if (html === null) {
    frame.srcdoc =
      '<!doctype html><meta http-equiv="Content-Security-Policy" content="default-src \'none\'"><title>empty</title>';
    return;
  }
  frame.srcdoc = html;
}

frame.addEventListener('load', () => {
  const doc = frame.contentDocument;
  if (!doc || !frameKey) return;
  const styleEl = doc.createElement('style');
  styleEl.id = FRAME_STYLE_ID;
  styleEl.textContent = frameCss();
  (doc.head ?? doc.documentElement).appendChild(styleEl);
  frameIndex = new Map();
  for (const e of Array.from(doc.querySelectorAll('[data-cs-i]')))
    frameIndex.set(Number(e.getAttribute('data-cs-i')), e);
  // Listeners run in this (the webview's) realm: the frame's own scripts never run.
  const numbered = (t: EventTarget | null) => (t instanceof doc.defaultView!.Element ? t.closest('[data-cs-i]') : null);
  doc.addEventListener(
    'click',
    (e) => {
      // A JSON view's <summary> still opens and closes its value (no script needed); anything else only picks.
      const summary = e.target instanceof doc.defaultView!.Element && e.target.closest('summary');
      if (!summary) e.preventDefault();
      e.stopPropagation();
      const target = numbered(e.target);
      if (!target) return;
      for (const p of Array.from(doc.querySelectorAll('[data-cs-picked]'))) p.removeAttribute('data-cs-picked');
      target.setAttribute('data-cs-picked', '');
      post({ type: 'pick', index: Number(target.getAttribute('data-cs-i')) });
    },
    true,
  );
  for (const type of ['auxclick', 'submit', 'dblclick']) doc.addEventListener(type, (e) => e.preventDefault(), true);
  doc.addEventListener('mouseover', (e) => numbered(e.target)?.setAttribute('data-cs-hover', ''), true);
  doc.addEventListener('mouseout', (e) => numbered(e.target)?.removeAttribute('data-cs-hover'), true);
  frameReady = true;
  applyHighlight(state?.analysis ?? null);
});

function applyHighlight(a: AnalysisView | null): void {
  if (!frameReady) {
    acknowledge();
    return;
  }
  for (const e of highlighted) e.removeAttribute('data-cs-hl');
  highlighted = [];
  const h = a?.highlight;
  for (const i of h?.indices ?? []) {
    const e = frameIndex.get(i);
    if (!e) continue;
    e.setAttribute('data-cs-hl', '');
    highlighted.push(e);
  }
  // Scroll to the first match when the highlighted selector changes, not on every keystroke.
  const key = `${h?.label}|${h?.selector}`;
  if (key !== lastHighlightKey && highlighted[0]) highlighted[0].scrollIntoView({ block: 'center', behavior: 'auto' });
  lastHighlightKey = key;
  acknowledge();
}

function acknowledge(): void {
  const rows = Number($('items').dataset.rows ?? '0');
  const data = Number($('data').dataset.rows ?? '0');
  post({
    type: 'rendered',
    seq,
    rows,
    highlighted: frameReady ? highlighted.length : 0,
    frame: frameReady ? frameKey : '',
    data,
  });
}

// ---------------------------------------------------------------------------------------------------------
// Toolbar

function openTyped(): void {
  const v = (url.value ?? '').trim();
  if (!/^https?:\/\/\S+$/i.test(v)) {
    $('banner').className = 'banner error';
    $('banner').textContent = 'Type an http(s) URL.';
    $('banner').hidden = false;
    return;
  }
  post({ type: 'openPage', url: v });
}

pages.addEventListener('change', () => {
  if (syncing || !pages.value) return;
  const choice = state?.choices.find((c) => (c.key ?? c.url) === pages.value);
  post({ type: 'openPage', url: choice?.url ?? pages.value, ...(choice?.key ? { key: choice.key } : {}) });
});
rules.addEventListener('change', () => {
  if (!syncing) post({ type: 'setRule', rule: rules.value || null });
});
browserBox.addEventListener('change', () => {
  if (!syncing) post({ type: 'setBrowser', on: !!browserBox.checked });
});
images.addEventListener('change', () => {
  if (!syncing) post({ type: 'setImages', allowed: !!images.checked });
});
$('open').addEventListener('click', openTyped);
url.addEventListener('keydown', (e) => {
  if (e.key === 'Enter') openTyped();
});
$('refetch').addEventListener('click', () => post({ type: 'refetch' }));
$('cancel').addEventListener('click', () => post({ type: 'cancelFetch' }));
$('fixture').addEventListener('click', () => post({ type: 'saveFixture' }));

window.addEventListener('message', (event: MessageEvent) => {
  const msg = event.data as HostMessage;
  if (!msg || typeof msg !== 'object') return;
  switch (msg.type) {
    case 'state':
      seq = msg.seq;
      render(msg.state);
      // What VS Code keeps for the panel: the task file, its page and the rule chosen come back after a reload.
      vscode.setState({ ...msg.state.restore, url: msg.state.page?.url ?? null });
      return;
    case 'frame':
      setFrame(msg.html, msg.key);
      return;
    case 'suggestion':
      renderSuggestion(msg.view, msg.error);
      return;
    case 'inserted': {
      const note = el(
        'span',
        msg.target === 'the cursor' ? 'Inserted at the cursor.' : `Inserted into ${msg.target}.`,
        'label',
      );
      note.id = 'inserted';
      $('pick-bar').appendChild(note);
      return;
    }
  }
});

post({ type: 'ready' });
