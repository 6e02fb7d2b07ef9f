import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { startRedis, type RedisServer, serveHttp, type HttpServer } from '../support/services';
import { writeTask } from '../support/crawl';

// Counts of this run (issue 31, item 6), with the real CLI: a second run that stores nothing (every page fails)
// printed `items stored order: 30 rows`, the table's rows from the first run. Now it says none were written by it.

const run = promisify(execFile);
const CLI = resolve('dist/cli.js');

describe("CLI summary: `items stored` counts this run's rows (issue 31, item 6)", function () {
  this.timeout(120_000);
  let redis: RedisServer;
  let site: HttpServer;
  let down = false;
  before(async () => {
    redis = await startRedis();
    site = await serveHttp((req, res) => {
      res.setHeader('content-type', 'text/html');
      if (down) return ((res.statusCode = 403), res.end('no'));
      if (req.url === '/')
        res.end(
          `${Array.from({ length: 5 }, (_, i) => `<a href="/o/${i}">o</a><a href="/o/${i}">again</a>`).join('')}`,
        );
      else res.end(`<h1 class="id">${req.url}</h1>`);
    });
  });
  after(async () => {
    await site?.close();
    await redis?.stop();
  });

  it('a first run writes 5 rows and says so; a second run that fetches nothing says none were written by it; a re-crawl merges into the stored rows', async () => {
    const task = await writeTask(`name: counts
start: [${site.url}/]
request: { robots: false }
rules:
  - name: list
    match: ["${site.url}/"]
    follow: [{ selector: a, to: order }]
  - name: order
    match: ["**/o/*"]
    items: [{ type: order, key: [id], fields: { id: h1.id } }]
`);
    const cli = async (...args: string[]) =>
      (await run(process.execPath, [CLI, ...args, '--redis', redis.url], { timeout: 90_000 })).stdout;
    const first = await cli('run', task.file, '--workers', '1');
    assert.match(
      first,
      /^ {2}items stored {4}order: 5 rows written by this run \(inserted or updated; 0 items of a key seen before, merged into its row\)$/m,
      first,
    );
    // Each link twice on the page: the second is a repeat, outside the total.
    assert.match(first, /^ {2}links dropped {3}0; 5 repeats \(the same URL again on a page, kept once\)$/m, first);
    down = true;
    const second = await cli('run', task.file, '--workers', '1');
    assert.match(second, /New run/, second);
    assert.match(
      second,
      /^ {2}items stored {4}none by this run \(0 items of a key seen before, merged into its row\); the store holds order: 5 rows from earlier runs$/m,
      second,
    );
    // A re-crawl of the same site: each item's key is stored already, and it is merged into that row. This said
    // "5 duplicates merged", as if the site repeated itself.
    down = false;
    const third = await cli('run', task.file, '--workers', '1');
    assert.match(
      third,
      /^ {2}items stored {4}order: 5 rows written by this run \(inserted or updated; 5 items of a key seen before, merged into its row\)$/m,
      third,
    );
  });
});
