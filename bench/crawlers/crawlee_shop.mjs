// What both Crawlee rows (crawlee.mjs: CheerioCrawler; crawlee_browser.mjs: PlaywrightCrawler) do with a page of the
// fixture shop: the bench task's canonical rules, its selectors and its routing, written once so the two rows
// extract and follow exactly the same things, and the same as Crawl Studio's bench task.

const BOOK = /\/catalogue\/book-[^/]*\.html$/;
const LIST = /(^\/$|\/catalogue\/page-[^/]*\.html$)/;

const text = (el) => el.first().text().replace(/\s+/g, ' ').trim();
const abs = (v, base) => (v ? new URL(v, base).href : null);

/** The shop crawled from `start`: its canonical URLs, the page handler, and the pages and items counted. */
export function fixtureShop(start) {
  const host = new URL(start).host;
  const counts = { pages: 0, items: {} };
  const add = (t, n) => (counts.items[t] = (counts.items[t] ?? 0) + n);

  function canonical(url) {
    const u = new URL(url);
    if (u.host !== host) return null;
    u.hash = '';
    if (u.search) {
      const params = [...u.searchParams]
        .filter(([k]) => k !== 'ref' && k !== 'src')
        .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
      u.search = params.length ? new URLSearchParams(params).toString() : '';
    }
    return u.href;
  }

  const transform = (label) => (req) => {
    const url = canonical(req.url);
    if (!url) return false;
    let l = label;
    if (!l) {
      const path = new URL(url).pathname;
      l = BOOK.test(path) ? 'book' : LIST.test(path) ? 'list' : null;
    }
    if (!l) return false;
    return { ...req, url, label: l };
  };

  /** One page, parsed into `$`: its items pushed, its links enqueued with their labels. */
  async function handle({ request, $, enqueueLinks, pushData }) {
    counts.pages++;
    const url = request.loadedUrl ?? request.url;
    if (request.label === 'book') {
      const items = $('article.product_page')
        .toArray()
        .map((el) => {
          const p = $(el);
          return {
            title: text(p.find('h1')),
            price: /[0-9.]+/.exec(text(p.find('p.price_color')))?.[0] ?? null,
            upc: text(p.find('td.upc')),
            in_stock: /\((\d+) available\)/.exec(text(p.find('p.availability')))?.[1] ?? null,
            tags: p
              .find('li.tag')
              .toArray()
              .map((t) => $(t).text().replace(/\s+/g, ' ').trim()),
            cover: abs(p.find('img').first().attr('src'), url),
          };
        });
      if (items.length) await pushData(items.map((d) => ({ type: 'book', ...d })));
      add('book', items.length);
      await enqueueLinks({ selector: 'ul.related a, header a', transformRequestFunction: transform(null) });
    } else {
      const items = $('article.product_pod')
        .toArray()
        .map((el) => {
          const pod = $(el);
          return {
            title: text(pod.find('h3 a')),
            price: /[0-9.]+/.exec(text(pod.find('p.price_color')))?.[0] ?? null,
            url: abs(pod.find('h3 a').first().attr('href'), url),
          };
        });
      if (items.length) await pushData(items.map((d) => ({ type: 'listing', ...d })));
      add('listing', items.length);
      await enqueueLinks({
        selector: 'ul.nav a, li.next a, ul.pages a, ul.sort a, header a, footer a',
        transformRequestFunction: transform('list'),
      });
      await enqueueLinks({ selector: 'article.product_pod a', transformRequestFunction: transform('book') });
    }
  }

  /** Runs `crawler` from the start page and prints the row's one JSON line: { result: { pages, failed, items, seconds } }. */
  async function crawl(crawler) {
    const t0 = performance.now();
    const stats = await crawler.run([{ url: canonical(start), label: 'list' }]);
    const seconds = (performance.now() - t0) / 1000;
    console.log(
      JSON.stringify({
        result: {
          pages: counts.pages,
          failed: stats.requestsFailed,
          finished: stats.requestsFinished,
          items: counts.items,
          seconds,
          pagesPerSec: counts.pages / seconds,
        },
      }),
    );
  }

  return { canonical, handle, crawl, counts };
}
