// The DOM helpers every webview bundles (media/<view>/*.ts import them; esbuild puts a copy in each bundle).
// Text from the page, the task file or the store is always set as text, never as HTML.

/** Adds CSS with the page's nonce: the Content-Security-Policy allows no other inline style. */
export function addStyle(css: string): void {
  const nonce =
    (document.currentScript as HTMLScriptElement | null)?.nonce ||
    document.querySelector<HTMLScriptElement>('script[nonce]')?.nonce ||
    '';
  const el = document.createElement('style');
  el.nonce = nonce;
  el.textContent = css;
  document.head.appendChild(el);
}

type AttrValue = string | number | boolean | undefined | null;
type Listeners = Record<string, (e: Event) => void>;
type Attrs = { [name: string]: AttrValue | Listeners } & { on?: Listeners };
/** A child: a node, or text (a number is written as its digits); null, undefined and false add nothing. */
export type Child = Node | string | number | null | undefined | false;

/** Creates an element with attributes (on: listeners) and children. Text is always set as text, never HTML. */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs?: Attrs,
  ...children: Child[]
): HTMLElementTagNameMap[K];
export function h(tag: string, attrs?: Attrs, ...children: Child[]): HTMLElement;
export function h(tag: string, attrs: Attrs = {}, ...children: Child[]): HTMLElement {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === 'on') {
      for (const [ev, fn] of Object.entries(v as Listeners)) el.addEventListener(ev, fn);
    } else if (v === true) el.setAttribute(k, '');
    else if (typeof v === 'string' || typeof v === 'number') el.setAttribute(k, String(v));
  }
  for (const c of children)
    if (c !== null && c !== undefined && c !== false) el.append(typeof c === 'number' ? String(c) : c);
  return el;
}

/**
 * A message's text with its `commands` as `<code>`: the engine's messages mark a command the user types with
 * backticks (describeRunPhase's "Start Crawl (or `crawl-studio run`) resumes it"), which a terminal shows as they
 * are and a page should not. An unpaired backtick stays text.
 */
export function withCode(text: string): (HTMLElement | string)[] {
  const parts = text.split('`');
  if (parts.length % 2 === 0) return [text];
  return parts.map((p, i) => (i % 2 === 1 ? h('code', {}, p) : p)).filter((p) => p !== '');
}

/** An element with only text and a class: the shorthand of views that build row by row. */
export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  text?: string,
  cls?: string,
): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  if (text !== undefined) e.textContent = text;
  if (cls) e.className = cls;
  return e;
}

/** A codicon; without a label it is decoration, hidden from screen readers. */
export function icon(name: string, label?: string): HTMLElement {
  return h('span', {
    class: `codicon codicon-${name}`,
    'aria-hidden': label ? undefined : 'true',
    'aria-label': label,
    role: label ? 'img' : undefined,
  });
}

/** An element of the page's skeleton, by id (the skeleton is the view's own: the id is there). */
export function byId<T extends HTMLElement = HTMLElement>(id: string): T {
  return document.getElementById(id) as T;
}

const renderedWith = new WeakMap<Element, string>();

/**
 * Runs `render` for `el` only when `inputs` differ from those it last rendered with. Views that are posted a
 * snapshot every second would otherwise replace their buttons under the pointer with identical ones: a click
 * whose press lands on the old button and its release on the new one reaches neither (the dashboard's Retry all
 * did nothing on a busy machine), and hover, focus and a text selection go with it.
 */
export function renderChanged(el: Element, inputs: unknown, render: () => void): void {
  const key = JSON.stringify(inputs);
  if (renderedWith.get(el) === key) return;
  renderedWith.set(el, key);
  render();
}

/** An option of a `<select>` that `setOptions` fills. */
export interface OptionSpec {
  readonly value: string;
  readonly label: string;
  readonly selected: boolean;
}

/**
 * Fills a `<select>` with `options`. When it already holds the same values (a poll that changed only a count in a
 * label), its options are updated in place, so a list the user has open stays open and what they picked stays
 * picked; only another set of values builds new options.
 */
export function setOptions(select: HTMLSelectElement, options: readonly OptionSpec[]): void {
  const current = [...select.options];
  if (current.length !== options.length || current.some((o, i) => o.value !== options[i]?.value)) {
    select.replaceChildren(...options.map((o) => h('option', { value: o.value, selected: o.selected }, o.label)));
    return;
  }
  options.forEach((o, i) => {
    const el = current[i];
    if (el && el.textContent !== o.label) el.textContent = o.label;
  });
  const wanted = options.findIndex((o) => o.selected);
  if (wanted >= 0 && select.selectedIndex !== wanted) select.selectedIndex = wanted;
}

/**
 * Makes `parent`'s children exactly `children`, in that order, moving only what is out of place. An element moved,
 * even back to where it was, loses a click pressed on it, and `replaceChildren` moves every one.
 */
export function placeChildren(parent: Element, children: readonly Element[]): void {
  const wanted = new Set<Node>(children);
  for (const c of Array.from(parent.childNodes)) if (!wanted.has(c)) c.remove();
  let next: Node | null = parent.firstChild;
  for (const c of children) {
    if (c === next) next = c.nextSibling;
    else parent.insertBefore(c, next);
  }
}

/**
 * One element per item, by key, kept from one render to the next: `make` builds an item's parts the first time its
 * key is shown, `update` writes the item into them every render (through renderChanged, so only what changed), and
 * the parent holds the items' elements in order. A table of groups whose counts move every second keeps each group's
 * buttons under the pointer.
 */
export function keyedChildren<T, P>(
  parent: Element,
  made: Map<string, P>,
  items: readonly T[],
  key: (item: T) => string,
  make: (item: T) => P,
  elementOf: (parts: P) => Element,
  update: (parts: P, item: T) => void,
): void {
  const shown = new Set<string>();
  const children = items.map((item) => {
    const k = key(item);
    shown.add(k);
    let parts = made.get(k);
    if (parts === undefined) {
      parts = make(item);
      made.set(k, parts);
    }
    update(parts, item);
    return elementOf(parts);
  });
  for (const k of Array.from(made.keys())) if (!shown.has(k)) made.delete(k);
  placeChildren(parent, children);
}

/** Sets an element's text when it differs: written anyway, it replaces the text node and a selection of it. */
export function setText(el: Element, text: string): void {
  if (el.textContent !== text) el.textContent = text;
}
