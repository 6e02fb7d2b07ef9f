import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import * as cheerioDefault from 'cheerio';
import * as cheerioSlim from 'cheerio/slim';
import { HtmlPage } from '../../src/core/extract/dom';
import { extractPage, type PageFacts } from '../../src/core/extract/extract';
import { analysePage, ruleByName } from '../../src/core/pipeline/page';
import { loadTaskFile } from '../../src/workspace/taskFile';

// Extraction per page by parser: parse alone, and parse + the bench task's selectors through Crawl Studio's
// extractPage (a pre-parsed document can be handed to it), for htmlparser2 as the engine calls it, the same
// through cheerio/slim's load (what the engine did before), and cheerio's default parse5 entry point. Also the
// engine's whole page step (analysePage: extraction + URL canonicalisation, scope and routing of every link).
// Time-boxed loops, the fastest of 7 rounds, in CPU µs per page. Prints { result: [...] }.

const { values } = parseArgs({
  options: { site: { type: 'string' }, task: { type: 'string' }, base: { type: 'string' }, ms: { type: 'string' } },
});
const site = values.site!;
const base = values.base!;
const roundMs = Number(values.ms ?? 300);

// CPU time (process.cpuUsage: user + system of this process), not wall time: the machine is shared, and
// another process taking the core stretches wall time but not the CPU a page costs.
function bench(fn: () => void): number {
  for (let i = 0; i < 20; i++) fn();
  const rounds: number[] = [];
  for (let r = 0; r < 7; r++) {
    let n = 0;
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    while (performance.now() - t0 < roundMs) {
      fn();
      n++;
    }
    const c = process.cpuUsage(c0);
    rounds.push((c.user + c.system) / n);
  }
  // The least-disturbed round: interference only ever adds time.
  return Math.min(...rounds);
}

async function main() {
  const task = await loadTaskFile(values.task!);
  const pages = [
    { kind: 'list', path: '/catalogue/page-2.html', rule: ruleByName(task, 'list')! },
    { kind: 'book', path: '/catalogue/book-7.html', rule: ruleByName(task, 'book')! },
  ];
  const out: Record<string, unknown>[] = [];
  for (const p of pages) {
    const html = readFileSync(join(site, p.path.slice(1)), 'utf8');
    const url = base + p.path;
    // The page as the worker's fetch describes it (worker/fetcher.ts factsOfFetch): no redirect, a 200.
    const facts: PageFacts = { url, finalUrl: url, status: 200, fetchedAt: Date.now() };
    const check = extractPage(HtmlPage.of(cheerioDefault.load(html)), facts, p.rule);
    const check2 = extractPage(html, facts, p.rule);
    if (JSON.stringify(check.items) !== JSON.stringify(check2.items) || check.links.length !== check2.links.length) {
      throw new Error(`parsers disagree on ${p.path}`);
    }
    out.push({
      page: p.kind,
      bytes: Buffer.byteLength(html),
      items: check.items.length,
      links: check.links.length,
      htmlparser2ParseUs: bench(() => HtmlPage.parse(html)),
      htmlparser2ExtractUs: bench(() => extractPage(html, facts, p.rule)),
      // What the engine did before: cheerio/slim's load of every page (see src/core/extract/dom.ts).
      cheerioLoadUs: bench(() => cheerioSlim.load(html)),
      cheerioLoadExtractUs: bench(() => extractPage(HtmlPage.of(cheerioSlim.load(html)), facts, p.rule)),
      parse5ParseUs: bench(() => cheerioDefault.load(html)),
      parse5ExtractUs: bench(() => extractPage(HtmlPage.of(cheerioDefault.load(html)), facts, p.rule)),
      analysePageUs: bench(() => analysePage(task, { facts, html, rule: p.rule, depth: 1 })),
    });
  }
  console.log(JSON.stringify({ result: out }));
}
main().catch((e) => {
  console.error(e);
  process.exit(1);
});
