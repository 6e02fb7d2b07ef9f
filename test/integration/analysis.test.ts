import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseTask } from '../../src/core/task/parse';
import type { CrawlTask } from '../../src/core/task/model';
import { DEMO_SITE, renderPage } from '../../src/demo/site';
import {
  AnalysisError,
  createAnalyser,
  inlineAnalyser,
  type AnalysisInput,
  type PageAnalyser,
} from '../../src/worker/analysis';
import { demoShopTask } from '../support/demoTask';

// The worker's analysis thread (dist/analysis.js, the real bundle) with pages posted ahead of the one it is on:
// results must come back to the page that asked, and a page stopped for its budget must not take the pages
// posted behind it down too.

const SITE = 'http://127.0.0.1:8737';
const SCRIPT = resolve('dist/analysis.js');

function demoTask(name = 'analysis'): CrawlTask {
  const { task, diagnostics } = parseTask(demoShopTask({ name, siteUrl: SITE }), '/tmp/analysis.crawl.yaml');
  assert.ok(task, diagnostics.map((d) => d.message).join('\n'));
  return task;
}

function pageInput(task: CrawlTask, path: string, rule: string): AnalysisInput {
  const html = renderPage(path, DEMO_SITE)?.body;
  assert.ok(html, `the demo site has no ${path}`);
  return {
    task,
    facts: { url: `${SITE}${path}`, finalUrl: `${SITE}${path}`, status: 200, fetchedAt: Date.UTC(2026, 0, 2) },
    html,
    rule,
    depth: 1,
  };
}

describe('analysis thread', function () {
  this.timeout(60_000);
  let analyser: PageAnalyser | null = null;

  before(() => {
    if (!existsSync(SCRIPT)) throw new Error('build first (node esbuild.mjs): dist/analysis.js is missing');
  });
  afterEach(async () => {
    await analyser?.close();
    analyser = null;
  });

  /** Posts `inputs` at once; the first must fail: its error, and the outcomes of the pages posted behind it. */
  async function firstFails(inputs: AnalysisInput[]) {
    const [first, ...behind] = await Promise.allSettled(inputs.map((input) => analyser!.analyse(input)));
    assert.equal(first!.status, 'rejected');
    const err = (first as PromiseRejectedResult).reason as AnalysisError;
    assert.ok(err instanceof AnalysisError, String(err));
    return { err, behind };
  }

  it('gives every page its own outcome when many are posted at once', async () => {
    const task = demoTask();
    const inputs = [
      ...[1, 2, 3, 4, 5].map((n) => pageInput(task, `/catalogue/page-${n}.html`, 'list')),
      ...Array.from({ length: 25 }, (_, i) => pageInput(task, `/catalogue/book-${i + 1}.html`, 'book')),
    ];
    analyser = createAnalyser([task], SCRIPT);
    const threaded = await Promise.all(inputs.map((input) => analyser!.analyse(input)));
    const inline = inlineAnalyser();
    for (const [i, input] of inputs.entries()) {
      assert.deepEqual(threaded[i], await inline.analyse(input), `outcome of ${input.facts.finalUrl}`);
    }
    // Distinct pages, distinct outcomes: a result handed to the wrong page would show here too.
    const upcs = threaded.slice(5).map((o) => o.items[0]?.data.upc);
    assert.equal(new Set(upcs).size, 25);
  });

  it('stops a page over its budget, and analyses the pages posted behind it in a fresh thread', async () => {
    const task = demoTask();
    const tight = demoTask('tight');
    // An enormous page: 200,000 links (12 MB) take over a second to parse here, twelve times the budget below.
    const page = pageInput(tight, '/catalogue/book-1.html', 'book');
    const links = Array.from(
      { length: 200_000 },
      (_, i) => `<li><a href="/catalogue/book-${i}.html?ref=${i}">b</a></li>`,
    );
    const bomb: AnalysisInput = {
      ...page,
      facts: { ...page.facts, finalUrl: `${SITE}/bomb.html` },
      html: `<html><body><ul class="related">${links.join('')}</ul>`,
    };
    const books = [7, 8, 9, 10, 11].map((n) => pageInput(task, `/catalogue/book-${n}.html`, 'book'));
    // Only the bomb's task has the short budget: the books behind it, in a thread that boots anew, must not fail
    // for a busy machine's slowness.
    analyser = createAnalyser([task, tight], SCRIPT, (t) => (t === tight ? 100 : 30_000));
    // The thread is up before the bomb is posted: its budget then runs on the parse, not on the thread's boot.
    await analyser.analyse(pageInput(task, '/catalogue/book-6.html', 'book'));
    const { err, behind: bookOutcomes } = await firstFails([bomb, ...books]);
    assert.equal(err.kind, 'budget');
    assert.match(err.message, /bomb\.html took longer than 0\.1 s/);
    const inline = inlineAnalyser();
    for (const [i, outcome] of bookOutcomes.entries()) {
      assert.equal(
        outcome.status,
        'fulfilled',
        `${books[i]!.facts.finalUrl}: ${(outcome as PromiseRejectedResult).reason}`,
      );
      assert.deepEqual((outcome as PromiseFulfilledResult<unknown>).value, await inline.analyse(books[i]!));
    }
  });

  it('fails a page nested too deeply with that reason, in the thread it was posted to, not at its budget', async () => {
    const task = demoTask();
    const page = pageInput(task, '/catalogue/book-1.html', 'book');
    // The parser bomb the budget used to stop (minutes of parsing): now stopped at MAX_NESTING by the parse itself.
    const deep: AnalysisInput = {
      ...page,
      facts: { ...page.facts, finalUrl: `${SITE}/deep.html` },
      html: `<html><body>${'<div>'.repeat(400_000)}x`,
    };
    const books = [12, 13].map((n) => pageInput(task, `/catalogue/book-${n}.html`, 'book'));
    // A budget no parse reaches here: an outcome of kind 'budget' would mean the parse ran on until it.
    analyser = createAnalyser([task], SCRIPT, () => 600_000);
    const { err, behind: bookOutcomes } = await firstFails([deep, ...books]);
    assert.equal(err.kind, 'error');
    assert.equal(err.message, 'the page nests elements too deeply to extract (more than 20,000 levels)');
    for (const [i, outcome] of bookOutcomes.entries())
      assert.equal(outcome.status, 'fulfilled', `${books[i]!.facts.finalUrl}`);
  });

  it("gives `page:` fields the page's URL, status and fetch time in the thread, as in the designer", async () => {
    const text =
      `name: facts\nstart: [${SITE}/]\nrules:\n  - name: book\n    items:\n      - type: book\n        fields:\n          title: h1\n` +
      `          url: { page: url }\n          landed: { page: finalUrl }\n          status: { page: status }\n          fetched: { page: fetchedAt }\n          rule: { page: rule }\n`;
    const task = parseTask(text, '/tmp/facts.crawl.yaml').task!;
    const page = pageInput(task, '/catalogue/book-3.html', 'book');
    const input: AnalysisInput = { ...page, facts: { ...page.facts, url: `${SITE}/b/3`, status: 203 } };
    analyser = createAnalyser([task], SCRIPT);
    const out = await analyser.analyse(input);
    assert.deepEqual(out, await inlineAnalyser().analyse(input));
    const { title: _, ...facts } = out.items[0]!.data;
    assert.deepEqual(facts, {
      url: `${SITE}/b/3`,
      landed: `${SITE}/catalogue/book-3.html`,
      status: '203',
      fetched: '2026-01-02T00:00:00.000Z',
      rule: 'book',
    });
  });
});
