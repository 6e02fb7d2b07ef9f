import assert from 'node:assert/strict';
import { analysePage } from '../../../src/core/pipeline/page';
import { parseTask } from '../../../src/core/task/parse';
import { CrawlQueue } from '../../../src/frontier/crawl';
import { connectRedis } from '../../../src/redis/connect';
import { startRedis, type RedisServer } from '../../support/services';
import { urlFacts } from '../../support/pageFacts';

// Found by the fault suite's hostile-site scenario: a page with 100,000 distinct links made enqueueLinks spread
// 200,000 arguments into one call ("Maximum call stack size exceeded"), so the page failed and none of its
// links was enqueued. Large index pages are ordinary on the web.

describe('fuzz regressions: a page with 100,000 links', function () {
  this.timeout(120_000);
  let redis: RedisServer;
  before(async () => {
    redis = await startRedis();
  });
  after(async () => {
    await redis?.stop();
  });

  it('enqueues what the page limit allows and counts the rest, in chunks', async () => {
    const { task } = parseTask(
      `name: many-links\nstart: [http://example.com/]\nscope: { maxPages: 11 }\nrules: [{ name: a, follow: [{ selector: a, to: a }] }]\n`,
      't.crawl.yaml',
    );
    // What analysePage keeps from such a page (checked on 1,000 links; the full page takes seconds to parse).
    const html = `<html><body>${Array.from({ length: 1000 }, (_, i) => `<a href="/p/${i}">${i}</a>`).join('')}</body></html>`;
    const sample = analysePage(task!, {
      facts: urlFacts('http://example.com/'),
      html,
      rule: task!.rules[0]!,
      depth: 0,
    }).kept;
    assert.equal(sample.length, 1000);
    const outcome = {
      kept: Array.from({ length: 100_000 }, (_, i) => ({ ...sample[0]!, url: `http://example.com/p/${i}` })),
    };
    const conn = connectRedis(redis.url);
    const q = new CrawlQueue(conn, task!.name);
    try {
      const { run } = await q.startRun(task!, { fresh: true });
      const codes = await q.enqueueLinks(task!, run, outcome.kept);
      assert.equal(codes.length, 100_000);
      assert.equal(codes.filter((c) => c === 'enqueued').length, 10, 'the start URL plus 10 links reach maxPages 11');
      assert.equal(codes.filter((c) => c === 'limit').length, 99_990);
      const stats = await q.stats(run.run);
      assert.equal(stats.enqueued, 11);
      assert.equal(stats.skipped.limit, 99_990);
      assert.equal(await q.frontierCount(), 11, 'queued in the frontier (no worker: the window is empty)');
      // A retried job (its worker died after discovery) finds its links queued already: nothing is queued twice.
      const again = await q.enqueueLinks(task!, run, outcome.kept);
      assert.equal(again.filter((c) => c === 'enqueued').length, 0);
      assert.equal(await q.frontierCount(), 11);
    } finally {
      await q.close();
      conn.disconnect();
    }
  });
});
