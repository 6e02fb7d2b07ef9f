import { Parser } from 'htmlparser2';

// A sitemap read as it arrives: text is written in chunks of any size and the entries found so far are taken out,
// so a worker never holds a whole sitemap (they reach 50 MB) nor all its entries. Both formats of the protocol
// (sitemaps.org): XML (<urlset> of <url>, or a <sitemapindex> of <sitemap>) and plain text, one URL a line.
//
// Only the protocol's own elements count: a <loc> is taken at depth 3 (root, url, loc), so the <image:loc> or
// <video:content_loc> that extensions nest deeper are never mistaken for a page. Prefixes are ignored
// (<sm:url> is <url>): sites write the sitemap namespace with and without one.

export type SitemapFormat = 'urlset' | 'sitemapindex' | 'text';

export type SitemapEntry =
  /** A page the sitemap lists, with its hreflang alternates (<xhtml:link rel="alternate">) when asked for. */
  | {
      readonly kind: 'page';
      readonly loc: string;
      readonly lastmod: string | null;
      readonly alternates: readonly string[];
    }
  /** A sitemap a sitemap index lists. */
  | { readonly kind: 'sitemap'; readonly loc: string; readonly lastmod: string | null };

/**
 * Longest <loc> or text line kept, in characters. Longer ones are cut here and refused later as too long (the
 * crawler's URL limit is 2,048): a hostile sitemap's one 50 MB <loc> must not become a 50 MB string.
 */
export const MAX_LOC_CHARS = 4096;
const MAX_LASTMOD_CHARS = 64;
/** hreflang alternates kept per URL: a real site has a few dozen languages at most. */
const MAX_ALTERNATES = 100;

/**
 * Deepest element a sitemap may nest. The protocol's are at depth 3 and its extensions' (image, video, news) a level
 * or two below. htmlparser2's parse is quadratic in the depth (it `unshift`s every open tag onto its stack) and a
 * sitemap is read on the worker's main thread: 2 MB of nested tags would hold it for minutes, its job locks unrenewed.
 * At 256 each tag costs at most that many moves, so even a 50 MB sitemap parses in seconds.
 */
export const MAX_SITEMAP_DEPTH = 256;

export interface SitemapParserOptions {
  /** Also report each URL's hreflang alternates. */
  readonly alternates?: boolean;
}

export class SitemapParser {
  private out: SitemapEntry[] = [];
  private mode: 'unknown' | 'xml' | 'text' = 'unknown';
  private xml: Parser | null = null;
  private rootName: string | null = null;
  private depth = 0;
  /** The <url> or <sitemap> being read (depth 2), its <loc> and <lastmod> text so far. */
  private item: 'page' | 'sitemap' | null = null;
  private field: 'loc' | 'lastmod' | null = null;
  private loc = '';
  private lastmod = '';
  private alternates: string[] = [];
  private line = '';

  constructor(private readonly opts: SitemapParserOptions = {}) {}

  /** What the document turned out to be; null until known, or when it is neither format (an HTML page, a feed). */
  get format(): SitemapFormat | null {
    if (this.mode === 'text') return 'text';
    if (this.rootName === 'urlset' || this.rootName === 'sitemapindex') return this.rootName;
    return null;
  }

  /** The XML document's root element, for messages about documents that are not sitemaps. */
  get root(): string | null {
    return this.rootName;
  }

  write(text: string): void {
    if (this.mode === 'unknown') {
      const first = /\S/.exec(text);
      if (!first) return;
      // The protocol's text format cannot start with '<'; every XML document does (after an optional BOM).
      this.mode = text[first.index] === '<' ? 'xml' : 'text';
      if (this.mode === 'xml') this.xml = this.xmlParser();
    }
    if (this.mode === 'xml') this.xml!.write(text);
    else this.writeText(text);
  }

  end(): void {
    if (this.mode === 'xml') this.xml!.end();
    else if (this.mode === 'text') this.endLine();
  }

  /** The entries parsed since the last call. */
  take(): SitemapEntry[] {
    const taken = this.out;
    this.out = [];
    return taken;
  }

  private writeText(text: string): void {
    let from = 0;
    for (;;) {
      const nl = text.indexOf('\n', from);
      if (nl < 0) {
        this.appendLine(text.slice(from));
        return;
      }
      this.appendLine(text.slice(from, nl));
      this.endLine();
      from = nl + 1;
    }
  }

  private appendLine(part: string): void {
    if (this.line.length <= MAX_LOC_CHARS) this.line += part.slice(0, MAX_LOC_CHARS + 1 - this.line.length);
  }

  private endLine(): void {
    const loc = this.line.trim();
    this.line = '';
    if (loc) this.out.push({ kind: 'page', loc, lastmod: null, alternates: [] });
  }

  private xmlParser(): Parser {
    return new Parser(
      {
        onopentag: (name, attribs) => {
          // Thrown out of write(): the reader fails the sitemap with this message (worker/sitemapReader.ts).
          if (++this.depth > MAX_SITEMAP_DEPTH)
            throw new Error(`it nests elements more than ${MAX_SITEMAP_DEPTH} deep, which no sitemap does`);
          const local = localName(name);
          if (this.depth === 1) {
            this.rootName = local;
          } else if (this.depth === 2) {
            this.item =
              this.rootName === 'urlset' && local === 'url'
                ? 'page'
                : this.rootName === 'sitemapindex' && local === 'sitemap'
                  ? 'sitemap'
                  : null;
            this.loc = '';
            this.lastmod = '';
            this.alternates = [];
          } else if (this.depth === 3 && this.item) {
            this.field = local === 'loc' ? 'loc' : local === 'lastmod' ? 'lastmod' : null;
            if (
              local === 'link' &&
              this.item === 'page' &&
              this.opts.alternates &&
              attribs.rel === 'alternate' &&
              attribs.href &&
              this.alternates.length < MAX_ALTERNATES
            ) {
              this.alternates.push(attribs.href.slice(0, MAX_LOC_CHARS + 1));
            }
          }
        },
        ontext: (text) => {
          if (this.depth !== 3 || !this.field) return;
          if (this.field === 'loc') {
            if (this.loc.length <= MAX_LOC_CHARS) this.loc += text.slice(0, MAX_LOC_CHARS + 1 - this.loc.length);
          } else if (this.lastmod.length <= MAX_LASTMOD_CHARS) {
            this.lastmod += text.slice(0, MAX_LASTMOD_CHARS + 1 - this.lastmod.length);
          }
        },
        onclosetag: () => {
          if (this.depth === 3) this.field = null;
          if (this.depth === 2 && this.item) {
            const loc = this.loc.trim();
            const lastmod = this.lastmod.trim() || null;
            if (loc)
              this.out.push(
                this.item === 'page'
                  ? { kind: 'page', loc, lastmod, alternates: this.alternates }
                  : { kind: 'sitemap', loc, lastmod },
              );
            this.item = null;
          }
          this.depth--;
        },
      },
      // Entities decoded: a sitemap must escape '&' in its URLs (&amp;). No DTDs, so no entity expansion attacks.
      { xmlMode: true, decodeEntities: true },
    );
  }
}

function localName(name: string): string {
  const colon = name.indexOf(':');
  return (colon < 0 ? name : name.slice(colon + 1)).toLowerCase();
}
