import { serveHttp, type HttpServer } from './services';

// The small site several CLI and worker tests crawl: a home page linking `pages` pages and one that answers 404,
// and the task that follows every link and keeps each page's title. One copy, so a change to either reaches every
// test that counts on "pages + 1 done, 1 failed (http-404)".

/** `/` links /p0 … /p{pages-1} and /missing (404); each page is `<h1>page /pN</h1>`. */
export function servePagesSite(pages: number): Promise<HttpServer> {
  return serveHttp((req, res) => {
    if (req.url === '/missing') {
      res.statusCode = 404;
      return res.end('gone');
    }
    res.setHeader('content-type', 'text/html');
    if (req.url === '/')
      res.end(
        `<h1>home</h1>${Array.from({ length: pages }, (_, i) => `<a href="/p${i}">p${i}</a>`).join('')}<a href="/missing">x</a>`,
      );
    else res.end(`<h1>page ${req.url}</h1>`);
  });
}

/** A task that follows every link from `start` and stores each page's h1 as an item keyed by it. */
export function pagesTaskYaml(
  name: string,
  start: string,
  head = 'request: { timeout: 5s, retries: { attempts: 1 } }',
): string {
  return `name: ${name}
start: [${start}]
${head}
rules:
  - name: page
    match: ["**"]
    follow:
      - selector: a
        to: page
    items:
      - type: page
        key: [title]
        fields:
          title: h1
`;
}
