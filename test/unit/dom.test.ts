import assert from 'node:assert/strict';
import { isTag, type Element } from 'domhandler';
import * as cheerio from 'cheerio/slim';
import { parseDocument } from 'htmlparser2';
import { HtmlPage, MAX_NESTING, parseWithScanLimit, TooDeepError } from '../../src/core/extract/dom';

// A page's parse stops at the first element nested past MAX_NESTING: htmlparser2's parse is quadratic in the depth,
// so 400,000 unclosed <div>s took minutes and held the analysis thread until its budget stopped it.

/** `depth` nested <div>s (the document's first element is the outermost) around a text. */
const nested = (depth: number) => `${'<div>'.repeat(depth)}x${'</div>'.repeat(depth)}`;

function depthOf(page: HtmlPage): number {
  let depth = 0;
  for (let node: Element | undefined = page.root.children.find(isTag); node; node = node.children.find(isTag)) depth++;
  return depth;
}

describe('parsing a page nested too deeply', () => {
  it(`parses ${MAX_NESTING.toLocaleString('en-US')} levels, and fails one more with the reason`, () => {
    assert.equal(depthOf(HtmlPage.parse(nested(MAX_NESTING))), MAX_NESTING);
    assert.throws(
      () => HtmlPage.parse(nested(MAX_NESTING + 1)),
      (err: unknown) =>
        err instanceof TooDeepError &&
        err.message === 'the page nests elements too deeply to extract (more than 20,000 levels)',
    );
  });

  it('fails 400,000 unclosed <div>s (2 MB) as they are parsed, not after minutes of parsing them all', () => {
    assert.throws(() => HtmlPage.parse(`<html><body>${'<div>'.repeat(400_000)}x`), TooDeepError);
  });

  it('counts open elements, not tags: a long page of siblings and void elements parses', () => {
    const flat = `<ul>${'<li><img src=a><br>x</li>'.repeat(MAX_NESTING * 2)}</ul>`;
    assert.equal(HtmlPage.parse(flat).root.children.length, 1);
  });
});

describe('end tags that close nothing', () => {
  it('parses 19,000 open <div>s and five million stray </span>s (35 MB), which htmlparser2 scanned its stack for', () => {
    // Without the check each </span> looks through the 19,000 open elements: 95 billion comparisons, 75 s on the
    // machine this was written on. With it, 0.6 s there; the timeout is 30 times that, and a quarter of the scan.
    const page = HtmlPage.parse(`<html><body>${'<div>'.repeat(19_000)}${'</span>'.repeat(5_000_000)}x`);
    assert.equal(depthOf(page), 19_002);
  }).timeout(20_000);

  it('builds the same document as htmlparser2 for random tag soup (stray, misnested, implied, foreign, void)', () => {
    // A fixed seed: the same 3,000 documents every run. Each is also parsed counting open elements from its first end
    // tag that closes nothing (a scan limit of 0), the way a page past the limit is parsed.
    let seed = 36;
    const next = (n: number) => ((seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31), seed % n);
    const names =
      'div span p br b I li ul table tr td img svg math title foreignObject desc mi option select script a'.split(' ');
    for (let doc = 0; doc < 3_000; doc++) {
      let html = '';
      for (let k = next(60); k >= 0; k--) {
        const name = names[next(names.length)]!;
        const r = next(10);
        html +=
          r < 4 ? `<${name}${next(3) === 0 ? ' id="x"' : ''}>` : r < 8 ? `</${name}>` : r < 9 ? `<${name}/>` : 't';
      }
      const theirs = cheerio.load(parseDocument(html)).html();
      assert.equal(HtmlPage.parse(html).$.html(), theirs, `document ${doc}: ${html}`);
      assert.equal(cheerio.load(parseWithScanLimit(html, 0)).html(), theirs, `document ${doc}, counting: ${html}`);
    }
  });

  it('skips end tags of a million distinct names that were never opened, under 19,000 open elements', () => {
    // Each name scanned for once would be as slow as one name scanned for a million times.
    const stray = Array.from({ length: 1_000_000 }, (_, i) => `</x${i}>`).join('');
    const page = HtmlPage.parse(`<html><body>${'<div>'.repeat(19_000)}${stray}x`);
    assert.equal(depthOf(page), 19_002);
  }).timeout(20_000);
});
