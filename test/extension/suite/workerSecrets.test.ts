import * as assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import * as vscode from 'vscode';
import type { CrawlStudioApi } from '../../../src/extension/extension';
import { CrawlQueue } from '../../../src/frontier/crawl';
import { readJobCounts } from '../../../src/observe/taskStatus';
import { loadTaskFile } from '../../../src/workspace/taskFile';
import { serveHttp, startRedis, type HttpServer, type RedisServer } from '../../support/services';
import { activateWith, restoreSettings, until } from '../support';

// Start Workers… gives the workers it starts the task's credentials from Secret Storage, by environment, as Start
// Crawl does (issue 17). The task goes through a real forward proxy that wants Basic credentials; the values are
// only in the extension's Secret Storage (not in the extension host's environment), so a worker that did not get
// them is refused with 407 and fails its pages.

const USER = 'px-user';
const PASSWORD = 'Px-Secret-58q';

describe('Start Workers… passes Secret Storage values to its workers (real proxy, Redis, workers)', function () {
  this.timeout(120_000);
  let redis: RedisServer;
  let site: HttpServer;
  let proxy: Server;
  let api: CrawlStudioApi;
  const forwarded: string[] = [];
  let refused = 0;

  before(async () => {
    redis = await startRedis();
    site = await serveHttp((req, res) => {
      res.setHeader('content-type', 'text/html');
      res.end(req.url === '/' ? '<a href="/p1">1</a><a href="/p2">2</a>' : `<h1>${req.url}</h1>`);
    });
    const expected = `Basic ${Buffer.from(`${USER}:${PASSWORD}`).toString('base64')}`;
    proxy = createServer((req, res) => {
      if (req.headers['proxy-authorization'] !== expected) {
        refused++;
        res.writeHead(407, { 'proxy-authenticate': 'Basic realm="t"' }).end();
        return;
      }
      const target = new URL(req.url!);
      forwarded.push(target.pathname);
      const up = httpRequest(
        {
          host: target.hostname,
          port: target.port,
          path: target.pathname,
          method: req.method,
          headers: { host: target.host },
        },
        (r) => {
          res.writeHead(r.statusCode!, r.headers);
          r.pipe(res);
        },
      );
      up.on('error', () => res.destroy());
      req.pipe(up);
    });
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
    api = await activateWith({ redisUrl: redis.url, concurrency: 2 });
  });

  after(async () => {
    await vscode.commands.executeCommand('crawlStudio.stopWorkers');
    await vscode.commands.executeCommand('crawlStudio._setCrawlSecretForTest', 'CRAWL_STUDIO_EXT_PX_USER', '');
    await vscode.commands.executeCommand('crawlStudio._setCrawlSecretForTest', 'CRAWL_STUDIO_EXT_PX_PASSWORD', '');
    await restoreSettings(api, ['redisUrl', 'concurrency']);
    proxy?.close();
    await site?.close();
    await redis?.stop();
  });

  it("fetches through the proxy with the stored credentials; none in the workers' command lines", async () => {
    assert.equal(
      process.env.CRAWL_STUDIO_EXT_PX_PASSWORD,
      undefined,
      "the value is not in the extension host's environment",
    );
    await vscode.commands.executeCommand('crawlStudio._setCrawlSecretForTest', 'CRAWL_STUDIO_EXT_PX_USER', USER);
    await vscode.commands.executeCommand(
      'crawlStudio._setCrawlSecretForTest',
      'CRAWL_STUDIO_EXT_PX_PASSWORD',
      PASSWORD,
    );
    const dir = mkdtempSync(join(tmpdir(), 'cs-ext-workers-'));
    const file = join(dir, 'proxied.crawl.yaml');
    writeFileSync(
      file,
      `name: ext-proxied
start: [${site.url}/]
request: { robots: false, retries: { attempts: 1 } }
proxy:
  urls: ['http://\${CRAWL_STUDIO_EXT_PX_USER}:\${CRAWL_STUDIO_EXT_PX_PASSWORD}@127.0.0.1:${(proxy.address() as AddressInfo).port}']
rules:
  - name: page
    follow: [{ selector: a, to: page }]
`,
    );
    // The run is seeded here; the workers Start Workers… starts take its jobs.
    const conn = new Redis(redis.url);
    const queue = new CrawlQueue(conn, 'ext-proxied');
    try {
      await queue.startRun(await loadTaskFile(file), { fresh: true });
      const pids = await vscode.commands.executeCommand<number[]>('crawlStudio.startWorkers', vscode.Uri.file(file), 1);
      assert.equal(pids?.length, 1);
      const logs: string[] = [];
      api.workers
        .list()
        .find((w) => w.pid === pids[0])
        ?.pool.supervisor.on('log', (_pid, line) => logs.push(line));
      const stats = await until('the crawl to drain', async () => {
        const s = await queue.stats((await queue.currentRun())!.run);
        const c = await readJobCounts(conn, 'ext-proxied');
        return s.done + s.failed > 0 && c.waiting + c.active + c.delayed + c.prioritized === 0 ? s : null;
      });
      assert.deepEqual(
        stats.failures,
        {},
        `no page failed (a worker without the credentials gets 407): ${JSON.stringify(stats)}\n${logs.join('\n')}`,
      );
      assert.equal(stats.done, 3);
      assert.equal(refused, 0, 'the proxy never refused the credentials');
      assert.deepEqual(forwarded.sort(), ['/', '/p1', '/p2']);
      const cmdline = readFileSync(`/proc/${pids[0]}/cmdline`, 'utf8');
      assert.ok(
        cmdline.includes('worker') && !cmdline.includes(PASSWORD),
        "the credential is not on the worker's command line",
      );
      assert.ok(
        readFileSync(`/proc/${pids[0]}/environ`, 'utf8')
          .split('\0')
          .includes(`CRAWL_STUDIO_EXT_PX_PASSWORD=${PASSWORD}`),
        'it is in its environment',
      );
    } finally {
      await queue.close();
      conn.disconnect();
    }
  });
});
