import type { CheerioAPI } from 'cheerio/slim';
import { isTag, type AnyNode, type Element } from 'domhandler';
import { suggestSelector } from '../extract/suggest';

// Follow rules read from what a page shows, for "New Task File" and the preview (issue 23, item 8): the template's
// guesses (`a[rel=next]`, `article a`) matched nothing on most sites. Two links matter on a list page: the one to
// the next page of the list, and the repeated links to what the list lists. Both are found by looking, and named
// with the picker's own selectors (suggest.ts), so they read like what a person would pick.

export interface FollowProposal {
  readonly selector: string;
  /** Elements the selector matches on the page. */
  readonly count: number;
  /** The first link it leads to, resolved against the page. */
  readonly example: string;
}

export interface FollowProposals {
  /** The link to the next page of the list (pagination), if the page has one. */
  readonly next: FollowProposal | null;
  /** The repeated links to the things the page lists (titles, products, posts), if there are at least three. */
  readonly items: FollowProposal | null;
}

const NEXT_TEXT = /^(next|next page|older|older posts|more|suivant|weiter|siguiente)$/;
const CHROME = new Set(['nav', 'header', 'footer', 'aside']);

export function proposeFollows($: CheerioAPI, pageUrl: string): FollowProposals {
  let base: URL;
  try {
    base = new URL(pageUrl);
  } catch {
    return { next: null, items: null };
  }
  const links = $('a[href]')
    .toArray()
    .filter(isTag)
    .map((el) => ({ el, url: resolve(el.attribs.href ?? '', base) }))
    .filter(
      (l): l is { el: Element; url: URL } =>
        l.url !== null && l.url.host === base.host && stripHash(l.url) !== stripHash(base),
    );
  const next = nextLink($, links);
  return { next: next ? proposal($, next.el, next.url, false) : null, items: itemLinks($, links, next?.el ?? null) };
}

function nextLink($: CheerioAPI, links: readonly { el: Element; url: URL }[]): { el: Element; url: URL } | null {
  let best: { el: Element; url: URL; score: number } | null = null;
  for (const l of links) {
    const rel = (l.el.attribs.rel ?? '').toLowerCase().split(/\s+/);
    const text = $(l.el)
      .text()
      .toLowerCase()
      .replace(/[\s»›→>]+/g, ' ')
      .trim();
    const label = `${l.el.attribs['aria-label'] ?? ''} ${l.el.attribs.title ?? ''}`.toLowerCase();
    const classes = `${l.el.attribs.class ?? ''} ${parentOf(l.el)?.attribs.class ?? ''}`.toLowerCase();
    const score = rel.includes('next')
      ? 4
      : NEXT_TEXT.test(text)
        ? 3
        : /\bnext\b/.test(label)
          ? 2
          : /\bnext\b/.test(classes)
            ? 1
            : 0;
    if (score > 0 && (!best || score > best.score)) best = { ...l, score };
  }
  return best;
}

/**
 * The largest group of same-shaped links outside the page's navigation: links in the same place of repeated
 * containers. Links in headings (titles) count double, and a group linking to few distinct pages (tags, "read
 * more" twins) counts for those pages only.
 */
function itemLinks(
  $: CheerioAPI,
  links: readonly { el: Element; url: URL }[],
  next: Element | null,
): FollowProposal | null {
  const groups = new Map<string, { el: Element; url: URL }[]>();
  for (const l of links) {
    if (l.el === next || inChrome(l.el) || $(l.el).text().trim() === '') continue;
    const key = shapeOf(l.el);
    const g = groups.get(key) ?? [];
    g.push(l);
    groups.set(key, g);
  }
  let best: { links: { el: Element; url: URL }[]; score: number } | null = null;
  for (const g of groups.values()) {
    const distinct = new Set(g.map((l) => stripHash(l.url))).size;
    if (distinct < 3) continue;
    const score = distinct * (inHeading(g[0]!.el) ? 2 : 1);
    if (!best || score > best.score) best = { links: g, score };
  }
  if (!best) return null;
  const first = best.links[0]!;
  return proposal($, first.el, first.url, true);
}

function proposal($: CheerioAPI, el: Element, url: URL, list: boolean): FollowProposal | null {
  const s = suggestSelector($, el, { preferList: list });
  const selector = list ? (s.list?.selector ?? s.selector) : s.unique.selector;
  let count: number;
  try {
    count = $(selector).length;
  } catch {
    return null;
  }
  return count > 0 ? { selector, count, example: url.toString() } : null;
}

/** Tag and classes of the element and its three closest ancestors: links in the same place of a repeated block. */
function shapeOf(el: Element): string {
  const parts: string[] = [];
  for (let e: Element | null = el, i = 0; e && i < 4; e = parentOf(e), i++)
    parts.push(`${e.name}.${(e.attribs.class ?? '').trim().split(/\s+/).sort().join('.')}`);
  return parts.join('<');
}

function inChrome(el: Element): boolean {
  for (let e = parentOf(el); e; e = parentOf(e)) if (CHROME.has(e.name) || e.attribs.role === 'navigation') return true;
  return false;
}

function inHeading(el: Element): boolean {
  for (let e: Element | null = el, i = 0; e && i < 3; e = parentOf(e), i++) if (/^h[1-6]$/.test(e.name)) return true;
  return false;
}

function parentOf(el: AnyNode): Element | null {
  const p = el.parent;
  return p && isTag(p) ? p : null;
}

function resolve(href: string, base: URL): URL | null {
  if (/^\s*(javascript|mailto|tel):/i.test(href)) return null;
  try {
    const u = new URL(href, base);
    return /^https?:$/.test(u.protocol) ? u : null;
  } catch {
    return null;
  }
}

function stripHash(u: URL): string {
  return `${u.origin}${u.pathname}${u.search}`;
}
