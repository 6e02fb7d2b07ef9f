import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { startRedis, type RedisServer, serveHttp, type HttpServer } from '../support/services';
import { writeTask } from '../support/crawl';

// Dropped links in the terminal (issue 21, item 1): a crawl whose scope or rules exclude every link ends after one
// page with exit 0, so the summary, the progress line and `status` must say how many were dropped, why, and which
// rule lost them. The real CLI against a real site and redis-server: the terminal output is the point.

const run = promisify(execFile);
const CLI = resolve('dist/cli.js');

function listSite(): Promise<HttpServer> {
  return serveHttp((req, res) => {
    res.setHeader('content-type', 'text/html');
    if (req.url === '/')
      res.end(
        `<ul>${Array.from({ length: 11 }, (_, i) => `<li><a href="/author/a${i}">a${i}</a></li>`).join('')}</ul><a href="/">home</a>`,
      );
    else res.end('<h1>author</h1>');
  });
}

describe('CLI: dropped links by reason (issue 21, item 1)', function () {
  this.timeout(120_000);
  let redis: RedisServer;
  let site: HttpServer;
  before(async () => {
    redis = await startRedis();
    site = await listSite();
  });
  after(async () => {
    await site?.close();
    await redis?.stop();
  });

  async function cli(...args: string[]): Promise<string> {
    const { stdout, stderr } = await run(process.execPath, [CLI, ...args, '--redis', redis.url], { timeout: 90_000 });
    return stdout + stderr;
  }

  it('a scope.allow that excludes every link: the summary counts them as `pattern` and names the rule and the allow list', async () => {
    const task = await writeTask(`name: drops-pattern
start: [${site.url}/]
scope: { allow: ["${site.url}/"] }
rules:
  - name: list
    follow:
      - selector: "li a"
        to: author
  - name: author
    match: ["**/author/*"]
`);
    const out = await cli('run', task.file, '--workers', '1', '--concurrency', '2');
    assert.match(out, /links dropped +11 \(pattern: 11\)/, out);
    assert.match(
      out,
      /warning: rule list: 11 of 11 links dropped \(pattern: scope\.allow \['http:\/\/127\.0\.0\.1:\d+\/'\] matches none of them/,
      out,
    );
    assert.match(out, /11 links dropped/, 'the progress line carries the total');

    const status = await cli('status', task.file);
    assert.match(status, /^links dropped +11 \(pattern: 11\)$/m, status);
    assert.match(status, /^ +pattern +11 +not matched by scope\.allow$/m, status);
    assert.match(status, /^warning: rule list: 11 of 11 links dropped/m, status);
  });

  it('a follow without `to` whose links no rule matches: counted as `no-rule`, the warning names the follow and the match patterns', async () => {
    const task = await writeTask(`name: drops-norule
start: [${site.url}/]
rules:
  - name: list
    match: ["${site.url}/"]
    follow:
      - selector: "li a"
`);
    const out = await cli('run', task.file, '--workers', '1', '--concurrency', '2');
    assert.match(out, /links dropped +11 \(no-rule: 11\)/, out);
    assert.match(
      out,
      /warning: rule list: 11 of 11 links dropped \(no-rule: no rule's match matches them \(follow 'li a' has no 'to'\); match patterns are list: \['http:\/\/127\.0\.0\.1:\d+\/'\]/,
      out,
    );
  });

  it('a crawl that keeps its links prints no drop warning', async () => {
    const task = await writeTask(`name: drops-none
start: [${site.url}/]
rules:
  - name: list
    match: ["${site.url}/"]
    follow:
      - selector: "li a"
        to: author
  - name: author
    match: ["**/author/*"]
`);
    const out = await cli('run', task.file, '--workers', '1', '--concurrency', '2');
    assert.match(out, /pages fetched +12/, out);
    assert.match(out, /links dropped +0$/m, out);
    assert.doesNotMatch(out, /warning: rule/, out);
  });
});
