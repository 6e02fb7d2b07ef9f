// The task file of the demo bookshop (src/demo/site.ts) that the extension and UI tests crawl: list pages lead to
// more list pages and to books, and each book is an item keyed by its UPC. Tests state only what they are about
// (retries, politeness, the book's fields); the rest stays one text, here.

export const PRICE_FIELD = '{ selector: p.price_color, regex: "[0-9.]+" }';

export interface DemoTaskOptions {
  readonly name: string;
  /** The shop's base URL, without the trailing slash. */
  readonly siteUrl: string;
  /** Attempts and a fixed delay between them; omitted, the task's defaults. */
  readonly retries?: { readonly attempts: number; readonly delay: string };
  /** A page's request timeout (e.g. "600s"); omitted, the task's default. */
  readonly timeout?: string;
  readonly perHost?: { readonly concurrency: number; readonly delay: string };
  /** List pages also follow the header's link to the home page. */
  readonly headerLinks?: boolean;
  /** The book's fields in order, as YAML flow values; default title and UPC. */
  readonly fields?: Readonly<Record<string, string>>;
}

export function demoShopTask(o: DemoTaskOptions): string {
  const fields = Object.entries(o.fields ?? { title: 'h1', upc: 'td.upc' })
    .map(([k, v]) => `${k}: ${v}`)
    .join(', ');
  return [
    `name: ${o.name}`,
    'start:',
    `  - ${o.siteUrl}/`,
    'canonical: { dropParams: [ref, src] }',
    ...(o.retries || o.timeout
      ? [
          `request: { ${[
            ...(o.timeout ? [`timeout: ${o.timeout}`] : []),
            ...(o.retries
              ? [`retries: { attempts: ${o.retries.attempts}, backoff: fixed, delay: ${o.retries.delay} }`]
              : []),
          ].join(', ')} }`,
        ]
      : []),
    ...(o.perHost
      ? [`politeness: { perHost: { concurrency: ${o.perHost.concurrency}, delay: ${o.perHost.delay} } }`]
      : []),
    'rules:',
    '  - name: list',
    `    match: ["${o.siteUrl}/", "**/catalogue/page-*.html"]`,
    '    follow:',
    `      - { selector: "ul.nav a, li.next a${o.headerLinks ? ', header a' : ''}", to: list }`,
    '      - { selector: "article.product_pod h3 a", to: book }',
    '  - name: book',
    '    items:',
    '      - type: book',
    '        scope: article.product_page',
    '        key: [upc]',
    `        fields: { ${fields} }`,
    '',
  ].join('\n');
}
