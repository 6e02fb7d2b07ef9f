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
import type { HostMessage, PreviewState } from '../../src/core/designer/protocol';
import { addStyle, byId, el } from '../shared/dom';
import { renderItems, renderLinks, renderProblems } from './analysisTabs';
import { applyHighlight, initFrame, setFrame, setSeq } from './frame';
import { post, vscode } from './host';
import { SKELETON, type ValueElement } from './skeleton';
import css from './style.css';
import { renderSitemap, renderSitemapSummary } from './sitemap';
import { renderBanner, renderFrameMessage, renderHighlightBar, renderStatus } from './statusBar';
import { renderStructured } from './structured';
import { renderSuggestion } from './suggestion';

addStyle(css);
byId('app').innerHTML = SKELETON;

const pages = byId<ValueElement>('pages');
const url = byId<ValueElement>('url');
const rules = byId<ValueElement>('rules');
const images = byId<ValueElement>('images');
const browserBox = byId<ValueElement>('browser');

let state: PreviewState | null = null;

/** While the toolbar is being filled from the state, its change events are not the person's. */
let syncing = false;

function setOptions(select: ValueElement, options: Array<{ value: string; label: string }>, value: string): void {
  const key = JSON.stringify(options);
  if (select.dataset.options !== key) {
    select.dataset.options = key;
    select.replaceChildren();
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
  byId('cancel').hidden = !s.loading;
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

initFrame(() => state?.analysis ?? null);

// ---------------------------------------------------------------------------------------------------------
// Toolbar

function openTyped(): void {
  const v = (url.value ?? '').trim();
  if (!/^https?:\/\/\S+$/i.test(v)) {
    byId('banner').className = 'banner error';
    byId('banner').textContent = 'Type an http(s) URL.';
    byId('banner').hidden = false;
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
byId('open').addEventListener('click', openTyped);
url.addEventListener('keydown', (e) => {
  if (e.key === 'Enter') openTyped();
});
byId('refetch').addEventListener('click', () => post({ type: 'refetch' }));
byId('cancel').addEventListener('click', () => post({ type: 'cancelFetch' }));
byId('fixture').addEventListener('click', () => post({ type: 'saveFixture' }));

window.addEventListener('message', (event: MessageEvent) => {
  const msg = event.data as HostMessage;
  if (!msg || typeof msg !== 'object') return;
  switch (msg.type) {
    case 'state':
      setSeq(msg.seq);
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
      byId('pick-bar').appendChild(note);
      return;
    }
  }
});

post({ type: 'ready' });
