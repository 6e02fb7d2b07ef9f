import * as assert from 'node:assert/strict';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import * as vscode from 'vscode';
import type { CrawlStudioApi } from '../../../src/extension/extension';
import { serveSite, type SiteServer } from '../../../src/demo/site';
import { taskKeys } from '../../../src/frontier/keys';
import { startRedis, type RedisServer } from '../../support/services';
import { demoShopTask } from '../../support/demoTask';
import { activateWith, restoreSettings } from '../support';

// Start Crawl on a task whose run another process drives (issue 22, item 8): the editor must say so and start
// nothing, not resume the run beside its driver. The driver here is a `crawl-studio run` on another machine, as
// its lease in the real Redis says; the refusal comes from the real launcher in the extension host.

describe('Start Crawl of a task that is already running (real Redis)', function () {
  this.timeout(120_000);
  let redis: RedisServer;
  let site: SiteServer;
  let api: CrawlStudioApi;
  let conn: Redis;

  before(async () => {
    redis = await startRedis();
    site = await serveSite({ listPages: 2, perPage: 4 }, 0);
    api = await activateWith({ redisUrl: redis.url, workers: 1 });
    conn = new Redis(redis.url);
  });

  after(async () => {
    conn?.disconnect();
    await restoreSettings(api, ['redisUrl', 'workers']);
    await site?.close();
    await redis?.stop();
  });

  it('shows "Crawl \'x\' not started: …" with who drives the run, starts and fetches nothing, opens no store', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cs-ext-busy-'));
    const file = join(dir, 'busy.crawl.yaml');
    writeFileSync(file, demoShopTask({ name: 'busy', siteUrl: site.url }));
    const since = Date.UTC(2026, 0, 2, 3, 4, 5);
    await conn.set(
      taskKeys('busy').lease,
      JSON.stringify({ owner: 'elsewhere', front: 'crawl-studio run', host: 'build-box', pid: 4242, since }),
      'PX',
      60_000,
    );

    const failed = new Promise<{ task: string; message: string }>((resolve) => {
      const sub = api.crawls.onDidFail((e) => {
        if (e.task !== 'busy') return;
        sub.dispose();
        resolve(e);
      });
    });
    const started = await vscode.commands.executeCommand<{ task: string }>(
      'crawlStudio.startCrawl',
      vscode.Uri.file(file),
    );
    assert.deepEqual(started, { task: 'busy' });
    const timeout = new Promise<never>((_, reject) =>
      setTimeout(() => reject(new Error('no message within 30 s')), 30_000),
    );
    const { message } = await Promise.race([failed, timeout]);

    assert.match(
      message,
      /^Crawl 'busy' not started: task 'busy' is already running: crawl-studio run \(pid 4242 on build-box, since 2026-01-02 03:04:05 UTC\) drives its run\./,
    );
    assert.match(message, /crawl-studio worker .*busy\.crawl\.yaml/);
    assert.equal(api.crawls.get('busy'), undefined, 'nothing runs for the task in this window');
    assert.equal(
      existsSync(join(dir, '.crawl', 'busy.sqlite')),
      false,
      "the store is the other driver's: not opened here",
    );
    assert.equal(await conn.hget(taskKeys('busy').meta, 'run'), null, 'no run started or resumed');
    assert.match(
      (await conn.get(taskKeys('busy').lease))!,
      /"owner":"elsewhere"/,
      'the lease still belongs to the driver',
    );
    assert.equal(site.hits.size, 0, 'no page fetched');
  });
});
