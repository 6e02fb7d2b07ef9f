import assert from 'node:assert/strict';
import { isTag, type Element } from 'domhandler';
import { HtmlPage, MAX_NESTING, TooDeepError } from '../../src/core/extract/dom';

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
