import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { Redis } from 'ioredis';
import { startRedis, type RedisServer, serveHttp, type HttpServer } from '../support/services';
import { writeTask } from '../support/crawl';

// Redis out of memory (issue 35, item 2). A real redis-server with a small maxmemory and the policy noeviction, a
// real page with many links: the run used to stall "running" for ever, the writer spinning on EXECABORT, pages
// failed with EXECABORT and most of the page's links lost. Now the run stops with a message naming maxmemory and
// its figures and a non-zero exit; after the limit is raised, the same command resumes and every link is fetched
// (counted in the server's own access log), none failed.

const CLI = resolve('dist/cli.js');
// Links for twice the room given below (~80 bytes a link, the ratio 30,000 links in 1,200 KB had): Redis fills all
// the same, and the resumed run crawls 20,000 pages, not 30,000 (this was the mocha stage's slowest test). Less
// room than 800 KB is not safe: at 400 KB the run's own start filled it, before any page.
const LINKS = 20_000;

interface CliResult {
  readonly code: number | null;
  readonly out: string;
}

function cli(args: string[], timeoutMs: number): Promise<CliResult> {
  return new Promise((done) => {
    execFile(
      process.execPath,
      [CLI, ...args],
      { timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024 },
      (err, stdout, stderr) => {
        const code = err ? ((err as { code?: number | null }).code ?? null) : 0;
        done({ code: typeof code === 'number' ? code : null, out: stdout + stderr });
      },
    );
  });
}

describe('Redis out of memory (issue 35, item 2)', function () {
  this.timeout(600_000);
  let redis: RedisServer;
  let site: HttpServer;
  const requests: string[] = [];

  before(async () => {
    redis = await startRedis();
    const links = Array.from({ length: LINKS }, (_, i) => `<a href="/p/${i}">${i}</a>`).join('');
    site = await serveHttp((req, res) => {
      requests.push(req.url ?? '');
      res.setHeader('content-type', 'text/html');
      res.end(req.url === '/' ? `<html><body>${links}</body></html>` : '<html><body><h1>x</h1></body></html>');
    });
  });
  after(async () => {
    await site?.close();
    await redis?.stop();
  });

  it('stops with a message naming maxmemory, then resumes after the limit is raised and fetches every link once stored', async () => {
    const admin = new Redis(redis.url);
    try {
      // Room for the run's connections and first pages, not for the frontier of the page's links (~80 bytes each): a
      // little over what an empty server uses.
      const used = Number(/^used_memory:(\d+)/m.exec(await admin.info('memory'))![1]);
      await admin.config('SET', 'maxmemory', String(used + 800 * 1024));
      await admin.config('SET', 'maxmemory-policy', 'noeviction');
      const task = await writeTask(`name: full
start: ['${site.url}/']
request: { robots: false }
politeness: { perHost: { concurrency: 16, delay: 0ms } }
rules:
  - name: page
    match: ['**']
    follow:
      - selector: a
`);
      const args = ['run', task.file, '--redis', redis.url, '--workers', '2', '--concurrency', '8'];
      const first = await cli(args, 240_000);
      assert.notEqual(first.code, 0, `the run must stop with a failure when Redis is full:\n${first.out.slice(-3000)}`);
      assert.notEqual(first.code, null, `the run must stop by itself, not stay running:\n${first.out.slice(-3000)}`);
      assert.match(
        first.out,
        /Redis is full: it refused the crawl's writes \(OOM, used_memory [\d.]+ [KM]?B of maxmemory [\d.]+ [KM]?B, policy noeviction/,
        first.out.slice(-3000),
      );
      assert.match(first.out, /CONFIG SET maxmemory/);
      assert.doesNotMatch(first.out, /EXECABORT Transaction discarded/, 'the writer no longer spins on EXECABORT');

      await admin.config('SET', 'maxmemory', '0');
      const second = await cli(args, 480_000);
      assert.equal(second.code, 0, second.out.slice(-3000));
      assert.match(second.out, /Resumed run/, second.out.slice(-3000));
      assert.match(second.out, /pages failed +0\b/, second.out.slice(-3000));
      assert.match(
        second.out,
        new RegExp(`pages fetched +${(LINKS + 1).toLocaleString('en-US')}\\b`),
        second.out.slice(-3000),
      );
      const fetched = new Set(requests.filter((u) => u.startsWith('/p/')));
      const missing = Array.from({ length: LINKS }, (_, i) => `/p/${i}`).filter((u) => !fetched.has(u));
      assert.deepEqual(missing.slice(0, 10), [], `${missing.length} of the page's ${LINKS} links were never fetched`);
    } finally {
      admin.disconnect();
    }
  });
});
