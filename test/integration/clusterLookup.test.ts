import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { expectedPages, serveSite, type SiteOptions } from '../../src/demo/site';
import { partitionOfUrl } from '../../src/frontier/layout';
import { TaskPartitions } from '../../src/frontier/partitions';
import { findUrl } from '../../src/observe/findUrl';
import { readJobRecord, readPageJob } from '../../src/observe/jobs';
import { connectRedis } from '../../src/redis/connect';
import { startRedisCluster, type RedisCluster } from '../support/services';
import { bookTask, writeTask } from '../support/crawl';

// Issue 34: on a Redis Cluster a task's jobs are spread over one partition per primary (frontier/layout.ts). The
// editor's Show Job (a stored row's page) and Find URL (and the job a finding opens) looked in the first partition
// only, so they missed the jobs of the others. A crawl by the real CLI on a real 3-primary cluster, then every page
// looked up through the read-models the extension calls (src/extension/results/jobs.ts is a thin caller of these).

const exec = promisify(execFile);
const CLI = resolve('dist/cli.js');
const SITE: SiteOptions = { listPages: 3, perPage: 10, filler: 1 };
const NAME = 'cluster-lookup';

describe('Show Job and Find URL on a crawl partitioned over a real Redis Cluster (issue 34)', function () {
  this.timeout(300_000);
  let cluster: RedisCluster;
  before(async () => {
    cluster = await startRedisCluster();
  });
  after(async () => {
    await cluster?.stop();
  });

  it('find the job of every page, whichever partition holds it', async () => {
    const site = await serveSite(SITE);
    const redis = connectRedis(cluster.url);
    const parts = new TaskPartitions(redis, NAME);
    try {
      const task = await writeTask(bookTask(site.url, NAME));
      const out = await exec(process.execPath, [CLI, 'run', task.file, '--workers', '2', '--redis', cluster.url], {
        maxBuffer: 16 * 1024 * 1024,
      });
      const run = await parts.run();
      assert.equal(run?.state, 'finished', out.stdout);
      const layout = await parts.layout();
      assert.equal(layout.tags.length, 3, `partitions: ${layout.tags.join(', ')}`);

      const pages = expectedPages(site.url, SITE);
      const missed: string[] = [];
      const held = new Set<number>();
      for (const page of pages) {
        // Find URL: where the page stands, its job among the findings.
        const found = await findUrl(parts, task, page);
        const url = found.url!;
        held.add(partitionOfUrl(layout, url));
        const finding = found.findings.find((f) => f.jobId !== undefined);
        if (!finding) {
          missed.push(
            `Find URL ${url} (partition ${partitionOfUrl(layout, url)}): ${found.findings.map((f) => f.text).join('; ')}`,
          );
          continue;
        }
        assert.equal(finding.state, 'completed', `${url}: ${finding.text}`);
        // Picking the finding opens its job.
        const picked = await readJobRecord(parts, finding.jobId!);
        if (picked?.data.url !== url) missed.push(`the job Find URL names for ${url}: ${finding.jobId} not found`);
        // Show Job of a stored row: its page's job in the run.
        const shown = await readPageJob(parts, run.run, url);
        if (shown?.data.url !== url) missed.push(`Show Job ${url} (partition ${partitionOfUrl(layout, url)}): no job`);
        else assert.equal(shown.state, 'completed');
      }
      // The lookups can only miss if the pages are spread: they are, over every partition.
      assert.equal(held.size, 3, `the ${pages.length} pages fall in partitions ${[...held].join(', ')}`);
      assert.deepEqual(missed, [], `${missed.length} lookups of ${pages.length} pages missed`);
    } finally {
      await parts.close();
      redis.disconnect();
      await site.close();
    }
  });
});
