import * as cheerio from 'cheerio/slim';
import type { AnyNode, Document, Element } from 'domhandler';
import { DomHandler, Parser } from 'htmlparser2';

// A page as extraction reads it: the document htmlparser2 parses (what cheerio/slim's load parses, with the same
// options: none), and cheerio bound to it only when a selector needs cheerio's own engine (see select.ts).
//
// Why not cheerio.load() for every page: it declares a class per call, and V8 keeps that class's hidden classes
// in the old generation with a path back to the loaded document. Every page's DOM then survived each young
// generation GC, was promoted and waited for a full one: 55-74% of young objects survived where 0.3% do with the
// document alone, and a page cost ~0.17 ms more CPU, a third of analysing it (bench, analysis thread, 6,000 pages).

export class HtmlPage {
  private bound: cheerio.CheerioAPI | null;

  private constructor(
    readonly root: Document,
    $: cheerio.CheerioAPI | null,
  ) {
    this.bound = $;
  }

  /** Throws `TooDeepError` for markup nested more than `MAX_NESTING` elements deep. */
  static parse(html: string): HtmlPage {
    const handler = new DepthCappedHandler();
    new StrayEndTagParser(handler).end(html);
    return new HtmlPage(handler.root, null);
  }

  /** A page someone already loaded with cheerio (the designer's annotated copy). */
  static of($: cheerio.CheerioAPI): HtmlPage {
    return new HtmlPage($.root()[0] as Document, $);
  }

  /** cheerio bound to this page, made on first use: for the selectors only cheerio answers (:root, :has, …). */
  get $(): cheerio.CheerioAPI {
    return (this.bound ??= cheerio.load(this.root));
  }
}

/**
 * How deep a page may nest its elements. htmlparser2 keeps its open tags in an array it `unshift`s, so its parse is
 * quadratic in the depth: 400,000 unclosed `<div>`s (2 MB) take minutes, and held the analysis thread, and every page
 * posted behind it, until its 30 s budget stopped it. Extraction recurses through the tree and overflows the
 * thread's stack at ~10,000-15,000 levels anyway, so a page this deep could not be extracted before either; parsing
 * up to the limit takes ~0.1 s. Browsers stop nesting at 512 (Chromium's kMaximumHTMLParserDOMTreeDepth) and hang
 * deeper elements on the 512th; real pages nest a few dozen deep.
 */
export const MAX_NESTING = 20_000;

/** A page nested deeper than `MAX_NESTING`: failed as it is parsed, in the words a stack overflow is failed with. */
export class TooDeepError extends Error {
  constructor() {
    super(`the page nests elements too deeply to extract (more than ${MAX_NESTING.toLocaleString('en-US')} levels)`);
    this.name = 'TooDeepError';
  }
}

/**
 * htmlparser2's parseDocument (same options: none), stopped at the first element past `MAX_NESTING`; once
 * StrayEndTagParser asks, it also counts its open elements by name.
 */
class DepthCappedHandler extends DomHandler {
  /** Open elements by name, once counted: the names of the parser's stack, at every end tag. */
  private open: Map<string, number> | null = null;

  override onopentag(name: string, attribs: Record<string, string>): void {
    // tagStack holds the document and each open element: its length is one more than the new element's depth.
    if (this.tagStack.length > MAX_NESTING) throw new TooDeepError();
    super.onopentag(name, attribs);
    if (this.open) this.open.set(name, (this.open.get(name) ?? 0) + 1);
  }

  override onclosetag(): void {
    // The parser closes the innermost element; a close with only the document open is DomHandler's to ignore.
    if (this.open && this.tagStack.length > 1) {
      const name = (this.tagStack[this.tagStack.length - 1] as Element).name;
      this.open.set(name, this.open.get(name)! - 1);
    }
    super.onclosetag();
  }

  /** Counts the open elements from now on. */
  countOpen(): void {
    this.open = new Map();
    for (const el of this.tagStack.slice(1) as Element[]) this.open.set(el.name, (this.open.get(el.name) ?? 0) + 1);
  }

  get counting(): boolean {
    return this.open !== null;
  }

  /** Open elements, the document's included. */
  get openDepth(): number {
    return this.tagStack.length;
  }

  /** Whether an element of this name is open (after countOpen()). */
  isOpen(name: string): boolean {
    return (this.open?.get(name) ?? 0) > 0;
  }
}

/** What StrayEndTagParser reads and does of htmlparser2's Parser (10.x) that its typings keep private. */
interface ParserInternals {
  endIndex: number;
  startIndex: number;
  readonly foreignContext: boolean[];
  getSlice(start: number, end: number): string;
}

/** htmlparser2's own lists (Parser.js): an end tag of these also leaves a foreign (SVG, MathML) context. */
const FOREIGN_CONTEXT = new Set([
  'math',
  'svg',
  'mi',
  'mo',
  'mn',
  'ms',
  'mtext',
  'annotation-xml',
  'foreignobject',
  'desc',
  'title',
]);

/**
 * How many open elements end tags that closed nothing may have had htmlparser2 scan before the parse counts its
 * open elements by name instead: a few milliseconds of scanning. Ordinary pages never get there.
 */
const STRAY_SCAN_LIMIT = 1_000_000;

/**
 * htmlparser2's Parser, where end tags that close nothing stop costing a scan. The Parser looks each end tag up in
 * its whole stack of open elements (`stack.indexOf`), and one with no open element of its name scans all of it to
 * find nothing: 19,000 open `<div>`s and a million `</span>`s (7 MB) were 19 billion comparisons, and held the
 * analysis thread until its 30 s budget, the designer's preview and `crawl-studio test` for minutes. Past
 * STRAY_SCAN_LIMIT, the handler counts its open elements by name, and an end tag of a name with none open is skipped
 * at once, as the Parser would after its scan (`p` and `br` are always the Parser's: their end tags open an
 * element). Until then the parse pays only a length comparison per end tag. test/unit/dom.test.ts parses random tag
 * soup both ways, and past the limit, and compares the documents.
 */
class StrayEndTagParser extends Parser {
  private scanned = 0;

  constructor(
    private readonly dom: DepthCappedHandler,
    private readonly scanLimit = STRAY_SCAN_LIMIT,
  ) {
    super(dom);
  }

  override onclosetag(start: number, endIndex: number): void {
    const self = this as unknown as ParserInternals;
    const { dom } = this;
    if (!dom.counting) {
      const open = dom.openDepth;
      super.onclosetag(start, endIndex);
      // Nothing closed: a scan of the whole stack (or a `p`, `br` or void element's end tag, counted alike).
      if (dom.openDepth === open && (this.scanned += open) > this.scanLimit) dom.countOpen();
      return;
    }
    // No options: HTML mode, names lower-cased, as the Parser reads them.
    const name = self.getSlice(start, endIndex).toLowerCase();
    if (name === 'p' || name === 'br' || dom.isOpen(name)) {
      super.onclosetag(start, endIndex);
      return;
    }
    if (FOREIGN_CONTEXT.has(name)) self.foreignContext.shift();
    self.endIndex = endIndex;
    self.startIndex = endIndex + 1;
  }
}

/** `HtmlPage.parse` with another STRAY_SCAN_LIMIT, for tests of both of the parser's ways. */
export function parseWithScanLimit(html: string, scanLimit: number): Document {
  const handler = new DepthCappedHandler();
  new StrayEndTagParser(handler, scanLimit).end(html);
  return handler.root;
}

/** Bound to an empty page: its node methods (attr, text, html) read the node alone, whatever page it is from. */
const anyPage = cheerio.load('');

/** cheerio's view of one node, for `.attr()`, `.text()` and `.html()` with cheerio's exact semantics. */
export function nodeOf(node: AnyNode): cheerio.Cheerio<AnyNode> {
  return anyPage(node);
}
