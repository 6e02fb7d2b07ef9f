import { DEMO_SITE, renderPage } from '../../src/demo/site';
import { preparePage, suggestFor } from '../../src/core/designer/page';
import { computePreview } from '../../src/core/designer/preview';

// The preview's update latency, for the benchmark suite: the issue asks for updates within 150 ms of a
// keystroke pause on a 300 KB page. One update is what the extension does after the debounce: parse and
// validate the task text, run analysePage (the workers' extraction) on the page, and compute the highlighted
// elements for the selector under the cursor. Posting to the webview and painting are not included.

export interface PreviewLatency {
  readonly shape: 'typical' | 'dense';
  readonly pageBytes: number;
  readonly runs: number;
  readonly meanMs: number;
  readonly p50Ms: number;
  readonly p95Ms: number;
  readonly maxMs: number;
  /** Means of the parts of one update. */
  readonly parseMs: number;
  readonly analyseMs: number;
  readonly highlightMs: number;
  /** One-off per page (parse and number the elements), not part of an update. */
  readonly prepareMs: number;
  readonly items: number;
  /** The picker: a selector suggested for a clicked card title in the middle of the page, p50 / p95. */
  readonly pickP50Ms: number;
  readonly pickP95Ms: number;
}

export interface LatencyOptions {
  /** Page size to reach, in bytes (default 300 KB). */
  readonly pageBytes?: number;
  readonly runs?: number;
  /**
   * `typical` (default): 100 product cards, the rest of the bytes in what real pages carry (long text, an inline
   * JSON state script, markup). `dense`: the whole page is product cards (about 1 400 at 300 KB), the worst case
   * for extraction, which runs every field selector once per card.
   */
  readonly shape?: 'typical' | 'dense';
}

const BASE = 'http://127.0.0.1:8737';

function taskText(titleSelector: string): string {
  return `name: bench
start: [${BASE}/catalogue/page-1.html]
rules:
  - name: list
    follow:
      - { selector: "li.next a", to: list }
      - { selector: "article.product_pod h3 a", to: book }
    items:
      - type: card
        scope: article.product_pod
        fields:
          title: ${titleSelector}
          price: { selector: p.price_color, regex: "[0-9.]+" }
          link: { selector: "h3 a", attr: href, url: true }
  - name: book
`;
}

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** Only product cards: about 230 bytes each, grown until the page is big enough. */
function densePage(target: number): string {
  let perPage = Math.ceil(target / 230);
  for (;;) {
    const html = renderPage('/catalogue/page-1.html', { ...DEMO_SITE, listPages: 2, perPage })!.body;
    if (Buffer.byteLength(html) >= target) return html;
    perPage = Math.ceil(perPage * 1.1);
  }
}

/** 100 cards; reviews (text in nested markup) and an inline state script make up the rest, as on real shops. */
function typicalPage(target: number): string {
  const html = renderPage('/catalogue/page-1.html', { ...DEMO_SITE, listPages: 2, perPage: 100 })!.body;
  const words = ['river', 'glass', 'orbit', 'lantern', 'maple', 'quiet', 'ember', 'harbor', 'velvet', 'signal'];
  const parts: string[] = [];
  let bytes = Buffer.byteLength(html);
  for (let i = 0; bytes < target * 0.6; i++) {
    const text = Array.from({ length: 40 }, (_, k) => words[(i * 7 + k * 3) % words.length]).join(' ');
    const review = `<div class="review"><div class="review-head"><span class="author">Reader ${i}</span><span class="stars" data-rating="${i % 5}">★</span></div><p>${text}.</p></div>\n`;
    parts.push(review);
    bytes += review.length;
  }
  const products: { id: number; sku: string; v: number }[] = [];
  let state = '';
  while (bytes + state.length < target) {
    for (let k = 0; k < 500; k++)
      products.push({ id: products.length, sku: `SKU-${products.length}`, v: products.length % 7 });
    state = JSON.stringify({ products });
  }
  const extra = `<section class="reviews">${parts.join('')}</section><script id="__STATE__" type="application/json">${state}</script>`;
  return html.replace('</body>', `${extra}</body>`);
}

/** Measures `runs` preview updates on a demo list page of at least `pageBytes`, alternating the edited selector. */
export function measurePreviewLatency(opts: LatencyOptions = {}): PreviewLatency {
  const target = opts.pageBytes ?? 300 * 1024;
  const runs = opts.runs ?? 30;
  const shape = opts.shape ?? 'typical';
  const html = shape === 'dense' ? densePage(target) : typicalPage(target);
  const p0 = performance.now();
  const page = preparePage(html, `${BASE}/catalogue/page-1.html`);
  const prepareMs = performance.now() - p0;
  const selectors = ['h3 a', 'h3', 'a[title]', 'h3 a'];
  const totals: number[] = [];
  let parseMs = 0;
  let analyseMs = 0;
  let highlightMs = 0;
  let items = 0;
  for (let i = 0; i < runs + 2; i++) {
    const text = taskText(selectors[i % selectors.length]!);
    const cursor = text.indexOf('title: ') + 8;
    const t = performance.now();
    const r = computePreview({ text, file: 'bench.crawl.yaml', page, rule: null, cursor, lastGood: null });
    const ms = performance.now() - t;
    if (i < 2) continue; // warm-up: JIT and the schema validator's first compile
    totals.push(ms);
    parseMs += r.view.timings.parseMs;
    analyseMs += r.view.timings.analyseMs;
    highlightMs += r.view.timings.highlightMs;
    items = r.view.items[0]?.total ?? 0;
  }
  const sorted = [...totals].sort((a, b) => a - b);
  const picks = measurePick(page, runs);
  return {
    shape,
    pageBytes: Buffer.byteLength(html),
    runs,
    meanMs: totals.reduce((a, b) => a + b, 0) / runs,
    p50Ms: percentile(sorted, 50),
    p95Ms: percentile(sorted, 95),
    maxMs: sorted[sorted.length - 1]!,
    parseMs: parseMs / runs,
    analyseMs: analyseMs / runs,
    highlightMs: highlightMs / runs,
    prepareMs,
    items,
    pickP50Ms: percentile(picks, 50),
    pickP95Ms: percentile(picks, 95),
  };
}

/** Sorted times of `runs` picker suggestions for the title link of the middle card (the list suggestion). */
function measurePick(page: ReturnType<typeof preparePage>, runs: number): number[] {
  const titles = page.$('article.product_pod h3 a').toArray();
  const index = page.index.get(titles[Math.floor(titles.length / 2)]!)!;
  const times: number[] = [];
  for (let i = 0; i < runs + 2; i++) {
    const t = performance.now();
    const s = suggestFor(page, index, null, true);
    const ms = performance.now() - t;
    if (!s) throw new Error('the picker suggested nothing for a card title');
    if (i >= 2) times.push(ms);
  }
  return times.sort((a, b) => a - b);
}
