// Small DOM helpers shared by the Crawl Studio webviews (bundled into each).

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
type Attrs = { [name: string]: AttrValue | Record<string, (e: Event) => void> } & {
  on?: Record<string, (e: Event) => void>;
};

/** Creates an element with attributes (on*: listeners) and children. Text is always set as text, never HTML. */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs?: Attrs,
  ...children: (Node | string | null | undefined | false)[]
): HTMLElementTagNameMap[K];
export function h(tag: string, attrs?: Attrs, ...children: (Node | string | null | undefined | false)[]): HTMLElement;
export function h(
  tag: string,
  attrs: Attrs = {},
  ...children: (Node | string | null | undefined | false)[]
): HTMLElement {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === 'on') {
      for (const [ev, fn] of Object.entries(v as Record<string, (e: Event) => void>)) el.addEventListener(ev, fn);
    } else if (v === true) el.setAttribute(k, '');
    else if (v !== false && v !== undefined && v !== null) el.setAttribute(k, String(v));
  }
  for (const c of children) if (c !== null && c !== undefined && c !== false) el.append(c);
  return el;
}

export function icon(name: string, label?: string): HTMLElement {
  return h('span', {
    class: `codicon codicon-${name}`,
    'aria-hidden': label ? undefined : 'true',
    'aria-label': label,
    role: label ? 'img' : undefined,
  });
}

export function fmtInt(n: number): string {
  return Math.round(n).toLocaleString('en-US');
}

export function fmtBytes(n: number): string {
  const units = ['B', 'KB', 'MB', 'GB', 'TB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) {
    n /= 1024;
    i++;
  }
  return `${n >= 10 || i === 0 ? Math.round(n) : n.toFixed(1)} ${units[i]}`;
}

export function fmtDuration(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${s % 60}s`;
  return `${Math.floor(m / 60)}h ${m % 60}m`;
}
