import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { startRedis, type RedisServer } from '../support/services';
import { writeTask } from '../support/crawl';
import { quotesTask, serveQuotes, SLOW_AUTHOR, TROUBLES, type QuotesServer } from '../support/quotesSite';

// The second test site as issue 32's tester found it: besides its quotes and authors, a 404, a 500, a page robots.txt
// forbids, an author page that answers slowly and off-site links. The real CLI crawls it against a real redis-server;
// the run's summary must put each where it belongs: the 404 and the 500 failed with their reasons (the 500 retried),
// the forbidden page skipped for robots.txt and never requested, the slow page fetched with its item, the off-site
// links dropped and counted.

const run = promisify(execFile);
const CLI = resolve('dist/cli.js');

describe('The quotes site with its troubles: a crawl reports each (issue 32)', function () {
  this.timeout(180_000);
  let redis: RedisServer;
  let site: QuotesServer;
  before(async () => {
    redis = await startRedis();
    site = await serveQuotes({ troubles: true, slowMs: 1_500 });
  });
  after(async () => {
    await site?.close();
    await redis?.stop();
  });

  async function cli(...args: string[]): Promise<string> {
    const { stdout, stderr } = await run(process.execPath, [CLI, ...args, '--redis', redis.url], { timeout: 150_000 });
    return stdout + stderr;
  }

  it('fails the 404 and the 500 with their reasons, skips the forbidden page, fetches the slow one, drops the off-site links', async () => {
    const task = await writeTask(quotesTask({ name: 'quotes-troubles', siteUrl: site.url }));
    const out = await cli('run', task.file, '--workers', '1', '--concurrency', '2');
    assert.match(out, /pages failed +2 \(/, out);
    assert.match(out, /^ +http-404: 1 — HTTP 404 .*\/author\/Anonymous-Author\//m, out);
    assert.match(out, /^ +http-500: 1 — HTTP 500 .*\/random\//m, out);
    assert.equal(site.hits.get(TROUBLES.serverError), 2, 'the 500 is tried twice (attempts: 2)');
    assert.equal(site.hits.get(TROUBLES.forbidden), undefined, 'robots.txt keeps the crawl from the forbidden page');
    assert.equal(site.hits.get(TROUBLES.slow), 1, 'the slow page is fetched once');
    assert.match(out, /skipped +1 \(robots: 1\)/, out);
    assert.match(out, /links dropped +\d+ \(offsite: \d+\)/, out);

    // The read-model every view shows (status --json's figures): 2 list pages, 12 authors and the slow page done,
    // robots.txt's page skipped, the 404 and the 500 failed; 20 quotes and 13 authors stored.
    const status = JSON.parse(await cli('status', task.file, '--json')) as {
      figures: { pages: { done: number; skipped: number; failed: number }; items: number; phase: string };
      stats: { skipped: Record<string, number>; failures: Record<string, number>; dropped: Record<string, number> };
    };
    assert.deepEqual(status.figures.pages, { done: 2 + 12 + 1, skipped: 1, failed: 2, total: 18 });
    assert.equal(status.figures.items, 2 * 10 + 12 + 1, `the quotes and the authors, ${SLOW_AUTHOR.name} among them`);
    assert.equal(status.figures.phase, 'finished');
    assert.deepEqual(status.stats.skipped, { robots: 1 });
    assert.deepEqual(status.stats.failures, { 'http-404': 1, 'http-500': 1 });
    // Each list page's footer links off-site twice; the first page's `ul.more` once more.
    assert.deepEqual(status.stats.dropped, { offsite: 2 * 2 + 1 });
  });
});
