// The rendered page: an iframe sandboxed without allow-scripts (the extension made the page inert already). This
// script reaches into it (same origin through allow-same-origin) to mark highlights and to turn clicks into picks,
// and tells the extension what the view shows once it is drawn (the acknowledgement the tests wait for).

import type { AnalysisView } from '../../src/core/designer/protocol';
import { byId } from '../shared/dom';
import { post } from './host';

/** The state message the view shows: acknowledged with its number. */
let seq = 0;
let frameKey = '';
let frameReady = false;
let frameIndex = new Map<number, Element>();
let highlighted: Element[] = [];
let lastHighlightKey = '';

export function setSeq(n: number): void {
  seq = n;
}

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

export function setFrame(html: string | null, key: string): void {
  const frame = byId<HTMLIFrameElement>('page-frame');
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

/** Marks the frame's page once it loads: highlight styles, the numbered elements, clicks turned into picks. */
export function initFrame(current: () => AnalysisView | null): void {
  const frame = byId<HTMLIFrameElement>('page-frame');
  frame.addEventListener('load', () => onLoad(frame, current));
}

function onLoad(frame: HTMLIFrameElement, current: () => AnalysisView | null): void {
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
  applyHighlight(current());
}

export function applyHighlight(a: AnalysisView | null): void {
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
  const rows = Number(byId('items').dataset.rows ?? '0');
  const data = Number(byId('data').dataset.rows ?? '0');
  post({
    type: 'rendered',
    seq,
    rows,
    highlighted: frameReady ? highlighted.length : 0,
    frame: frameReady ? frameKey : '',
    data,
  });
}
