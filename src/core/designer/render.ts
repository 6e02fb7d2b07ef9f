import * as cheerio from 'cheerio/slim';
import { isTag, type AnyNode, type Element } from 'domhandler';
import { HtmlPage } from '../extract/dom';
import { resolveBase } from '../extract/extract';

// The page as the preview renders it: inert. The webview shows it in an iframe sandboxed without
// `allow-scripts`, under a CSP that loads nothing but (optionally) images from the page's origin; this is the
// third layer: everything that runs code, navigates, or fetches on its own is removed from the HTML before it
// gets there. Elements keep the `data-cs-i` number they were given when the page was prepared, which is how
// the preview highlights matches and how a click is mapped back to the element the extraction sees.

/** Elements removed with their content. */
const DROP = 'script, base, link, iframe, frame, frameset, object, embed, applet, portal, meta[http-equiv]';

/** Attributes whose value is a URL the browser may load or navigate to. */
const URL_ATTRS = [
  'href',
  'src',
  'action',
  'formaction',
  'poster',
  'background',
  'xlink:href',
  'data',
  'cite',
  'longdesc',
];

/** Attributes that load or navigate on their own, or carry markup. */
const DROP_ATTRS = new Set(['srcdoc', 'ping', 'http-equiv', 'nonce', 'integrity', 'autofocus']);

const SCRIPT_URL = /^\s*(javascript|vbscript|data\s*:\s*text\/html|data\s*:\s*application\/(xhtml|javascript))/i;

export interface RenderOptions {
  /** The page's URL (after redirects): relative image URLs are made absolute against it (or its <base>). */
  readonly url: string;
  /** The origin images may load from, or null (images stay blocked by the CSP anyway). */
  readonly imageOrigin: string | null;
}

/**
 * Makes the annotated HTML safe to render: no scripts, no event handlers, no <base>, no meta refresh or CSP
 * override, no frames or plugins, no script URLs; URLs absolute. A CSP meta is added as the first thing in
 * <head> so the document restricts itself even if the frame's policy were looser.
 */
export function renderableHtml(annotatedHtml: string, opts: RenderOptions): string {
  const $ = cheerio.load(annotatedHtml);
  // The same base the workers resolve links against.
  const base = resolveBase(HtmlPage.of($), opts.url);
  $(DROP).remove();
  for (const el of $('*').toArray()) {
    if (!isTag(el)) continue;
    for (const name of Object.keys(el.attribs)) {
      const lower = name.toLowerCase();
      const value = el.attribs[name]!;
      if (lower.startsWith('on') || DROP_ATTRS.has(lower)) {
        delete el.attribs[name];
        continue;
      }
      if (URL_ATTRS.includes(lower)) {
        if (SCRIPT_URL.test(value)) delete el.attribs[name];
        else el.attribs[name] = absolute(value, base);
      } else if (lower === 'srcset') {
        el.attribs[name] = value
          .split(',')
          .map((part) => {
            const [u, ...rest] = part.trim().split(/\s+/);
            return u ? [absolute(u, base), ...rest].join(' ') : '';
          })
          .filter(Boolean)
          .join(', ');
      } else if (lower === 'style' && /expression\s*\(|javascript:/i.test(value)) {
        delete el.attribs[name];
      }
    }
  }
  // Form submission is blocked by the sandbox (no allow-forms); take the target away as well.
  $('form').removeAttr('action').removeAttr('target');
  // Inline images (data:) always; the page's own origin only when images are on. ('none' beside data: is ignored by
  // the browser, and reported as a CSP error in the console.)
  const csp = `default-src 'none'; img-src ${opts.imageOrigin ? `${opts.imageOrigin} ` : ''}data:; style-src 'unsafe-inline'; font-src 'none'`;
  const meta = `<meta http-equiv="Content-Security-Policy" content="${csp}">`;
  const head = $('head');
  if (head.length > 0) head.prepend(meta);
  else $.root().prepend(`<head>${meta}</head>`);
  return $.html();
}

function absolute(value: string, base: string): string {
  if (value.startsWith('#')) return value;
  try {
    return new URL(value.trim(), base).href;
  } catch {
    return value;
  }
}

/** The attribute that numbers elements for the preview. Selectors never use it (the picker ignores data-cs-*). */
export const INDEX_ATTR = 'data-cs-i';

/** Walks the element tree in document order. */
export function elementsInOrder(root: AnyNode): Element[] {
  const out: Element[] = [];
  const stack: AnyNode[] = [root];
  while (stack.length > 0) {
    const n = stack.pop()!;
    if (isTag(n)) out.push(n);
    if ('children' in n) {
      const children = n.children as AnyNode[];
      for (let i = children.length - 1; i >= 0; i--) stack.push(children[i]!);
    }
  }
  return out;
}
