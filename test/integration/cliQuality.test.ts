import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { startRedis, type RedisServer, serveHttp, type HttpServer } from '../support/services';
import { writeTask } from '../support/crawl';

// Field quality and recorded errors from the terminal (issue 21, item 4): a wrong selector and a required field
// that matches nothing, on a real site crawled by the real CLI; the summary, `quality` and `errors` must say so.

const exec = promisify(execFile);
const CLI = resolve('dist/cli.js');

describe('CLI: field quality and errors (issue 21, item 4)', function () {
  this.timeout(120_000);
  let redis: RedisServer;
  let web: HttpServer | undefined;
  let base: string;
  before(async () => {
    redis = await startRedis();
    web = await serveHttp((req, res) => {
      res.setHeader('content-type', 'text/html');
      if (req.url === '/')
        res.end(Array.from({ length: 6 }, (_, i) => `<a class="p" href="/p${i}">p${i}</a>`).join(''));
      else
        res.end(
          `<div class="item"><h1>Title ${req.url}</h1><span class="price">${req.url!.length}</span>${Number(req.url!.slice(2)) % 2 === 0 ? '<span class="sku">S</span>' : ''}</div>`,
        );
    });
    base = web.url;
  });
  after(async () => {
    await web?.close();
    await redis?.stop();
  });

  it('warns in the summary about a field empty in most items, with its selector; quality and errors show the details', async () => {
    const task = await writeTask(`name: quality
start: [${base}/]
rules:
  - name: list
    follow: [{ selector: a.p, to: page }]
  - name: page
    items:
      - type: product
        scope: div.item
        key: [title]
        fields:
          title: h1
          author: .byline
          sku: { selector: .sku, required: true }
          price: .price
`);
    const cli = (...a: string[]) =>
      exec(process.execPath, [CLI, ...a, ...(a[0] === 'run' ? ['--redis', redis.url, '--workers', '1'] : [])]);
    const run = await cli('run', task.file);
    assert.match(
      run.stdout,
      /^ {2}warning: product\.author is empty in 3 of 3 items \(selector '\.byline'\)$/m,
      run.stdout,
    );
    assert.doesNotMatch(run.stdout, /product\.(title|price) is empty/, run.stdout);
    assert.match(run.stdout, /^ {2}see the errors {2}crawl-studio errors /m, run.stdout);

    const q = await cli('quality', task.file);
    assert.match(q.stdout, /^product: 3 items$/m, q.stdout);
    assert.match(q.stdout, /^ {2}title +0 \(0%\) +3 {2}selector 'h1'$/m, q.stdout);
    assert.match(q.stdout, /^ {2}author +3 \(100%\) +0 {2}selector '\.byline' {2}<- mostly empty$/m, q.stdout);

    const e = await cli('errors', task.file, '--limit', '2');
    assert.match(e.stdout, /^3 errors recorded in .* \(the first 2; --limit N for more\)$/m, e.stdout);
    const rows = e.stdout.trim().split('\n').slice(1);
    assert.equal(rows.length, 2, e.stdout);
    for (const r of rows)
      assert.match(r, new RegExp(`^\\S+ +${base.replace(/[.]/g, '\\.')}/p\\d \\(rule page.*\\): .*sku`), r);
  });
});
