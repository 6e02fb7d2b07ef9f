import * as cheerio from 'cheerio/slim';
import type { AnyNode, Document } from 'domhandler';
import { parseDocument } from 'htmlparser2';

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

  static parse(html: string): HtmlPage {
    return new HtmlPage(parseDocument(html), null);
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

/** Bound to an empty page: its node methods (attr, text, html) read the node alone, whatever page it is from. */
const anyPage = cheerio.load('');

/** cheerio's view of one node, for `.attr()`, `.text()` and `.html()` with cheerio's exact semantics. */
export function nodeOf(node: AnyNode): cheerio.Cheerio<AnyNode> {
  return anyPage(node);
}
