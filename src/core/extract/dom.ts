import * as cheerio from 'cheerio/slim';
import type { AnyNode, Document } from 'domhandler';
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
    new Parser(handler).end(html);
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

/** htmlparser2's parseDocument (same options: none), stopped at the first element past `MAX_NESTING`. */
class DepthCappedHandler extends DomHandler {
  override onopentag(name: string, attribs: Record<string, string>): void {
    // tagStack holds the document and each open element: its length is one more than the new element's depth.
    if (this.tagStack.length > MAX_NESTING) throw new TooDeepError();
    super.onopentag(name, attribs);
  }
}

/** Bound to an empty page: its node methods (attr, text, html) read the node alone, whatever page it is from. */
const anyPage = cheerio.load('');

/** cheerio's view of one node, for `.attr()`, `.text()` and `.html()` with cheerio's exact semantics. */
export function nodeOf(node: AnyNode): cheerio.Cheerio<AnyNode> {
  return anyPage(node);
}
