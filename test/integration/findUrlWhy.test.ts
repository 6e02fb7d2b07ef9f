import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { serveSite } from '../../src/demo/site';
import { TaskPartitions } from '../../src/frontier/partitions';
import { readRunStats } from '../../src/frontier/stats';
import { findUrl } from '../../src/observe/findUrl';
import { connectRedis } from '../../src/redis/connect';
import { startRedis, type RedisServer } from '../support/services';
import { writeTask } from '../support/crawl';

// Issue 32, item 7: Find URL said "no page linked to it" of an off-site URL that four pages link to. Every page of
// the demo shop links to the same partner site in its footer; after a crawl that follows every link, Find URL of
// that URL must say its links are dropped as off-site, with the run's count, never that no page linked to it.

const exec = promisify(execFile);
const CLI = resolve('dist/cli.js');
const PARTNER = 'https://offsite.example.com/partner';

describe('Find URL: why a URL pages link to was never fetched (issue 32)', function () {
  this.timeout(180_000);
  let redis: RedisServer;
  before(async () => (redis = await startRedis()));
  after(async () => redis?.stop());

  it("says the links to an off-site URL are dropped, with the run's count, not that no page linked to it", async () => {
    const site = await serveSite({ listPages: 1, perPage: 3, filler: 1 });
    const client = connectRedis(redis.url);
    const parts = new TaskPartitions(client, 'find-why');
    try {
      const task = await writeTask(`name: find-why
start: [${site.url}/]
rules:
  - name: page
    match: ["${site.url}/**"]
    follow: [{ selector: "a", to: page }]
`);
      const out = await exec(process.execPath, [CLI, 'run', task.file, '--workers', '1', '--redis', redis.url], {
        maxBuffer: 16 * 1024 * 1024,
      });
      const run = await parts.run();
      assert.equal(run?.state, 'finished', out.stdout);
      // Every page fetched has the partner link in its footer: the run dropped one off-site link per page.
      const done = (await readRunStats(client, 'find-why', run.run)).done;
      assert.ok(done >= 5, `pages fetched: ${done}`);
      const found = await findUrl(parts, task, PARTNER);
      const texts = found.findings.map((f) => f.text);
      assert.ok(
        texts.some((t) => /out of scope: offsite/.test(t)),
        texts.join('\n'),
      );
      const why = texts.find((t) => t.startsWith('not queued in run'));
      assert.ok(why, texts.join('\n'));
      assert.ok(why.includes(`links to it are dropped as offsite (the run dropped ${done} offsite links so far)`), why);
      assert.ok(!texts.some((t) => /no page (has )?linked to it/.test(t)), texts.join('\n'));

      // An in-scope URL no page links to: not claimed to be unlinked either, but not blamed on a drop reason.
      const lonely = await findUrl(parts, task, `${site.url}/never-linked.html`);
      const lonelyTexts = lonely.findings.map((f) => f.text);
      assert.ok(
        lonelyTexts.some((t) => t.startsWith(`not seen in run ${run.run}: no page has linked to it yet`)),
        lonelyTexts.join('\n'),
      );
    } finally {
      await parts.close();
      client.disconnect();
      await site.close();
    }
  });
});
