// The lines around the page: the status line, the banner, the frame's message while there is no page, and the
// highlight bar (what the selector at the cursor matches).

import type { AnalysisView, PreviewState } from '../../src/core/designer/protocol';
import { byId, el } from '../shared/dom';
import { bannerOf, frameMessage, matches, statusText } from './text';

export function renderStatus(s: PreviewState): void {
  const status = byId('status');
  status.textContent = statusText(s);
  status.title = status.textContent;
}

export function renderBanner(s: PreviewState): void {
  const banner = byId('banner');
  const { text, error } = bannerOf(s);
  banner.className = error ? 'banner error' : 'banner';
  banner.textContent = text;
  banner.hidden = text === '';
}

export function renderFrameMessage(s: PreviewState): void {
  const frameMsg = byId('frame-msg');
  const text = frameMessage(s);
  if (text !== null) {
    frameMsg.textContent = text;
    frameMsg.hidden = false;
  } else frameMsg.hidden = true;
}

export function renderHighlightBar(a: AnalysisView | null): void {
  const bar = byId('hl-bar');
  bar.replaceChildren();
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
  const c = el('span', matches(h.count), 'count');
  c.id = 'hl-count';
  bar.appendChild(c);
  if (h.scopes) bar.appendChild(el('span', `in ${h.scopes.matched} of ${h.scopes.total} items`, 'label'));
}
