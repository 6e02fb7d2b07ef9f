import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { PageSource } from '../../src/extension/designer/pages';
import { decodeChecked } from '../../src/worker/charset';
import { fetchPage } from '../../src/worker/fetcher';
import { writeTask } from '../support/crawl';
import { serveHttp, startRedis, type HttpServer, type RedisServer } from '../support/services';

// A Content-Type charset that contradicts the page's <meta charset> (issue 30, item 7): the header wins (WHATWG),
// and a UTF-8 page labelled iso-8859-1 reads "CrÃ¨me" with no error anywhere. The run's summary and `status` warn,
// naming the host and both charsets; the designer's preview says it in its banner. A real site, redis-server, CLI.

const run = promisify(execFile);
const CLI = resolve('dist/cli.js');

const page = (title: string, links = '') =>
  `<!doctype html><html><head><meta charset="utf-8"><title>t</title></head><body><h1>${title}</h1>${links}</body></html>`;

function site(): Promise<HttpServer> {
  return serveHttp((req, res) => {
    if (req.url === '/') {
      // Agreeing: UTF-8 bytes, utf-8 in both.
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      return res.end(Buffer.from(page('Crème brûlée', '<a href="/wrong">w</a> <a href="/wrong2">w2</a>'), 'utf8'));
    }
    if (req.url === '/wrong' || req.url === '/wrong2') {
      // UTF-8 bytes, the header says iso-8859-1, the meta utf-8.
      res.writeHead(200, { 'content-type': 'text/html; charset=iso-8859-1' });
      return res.end(Buffer.from(page('Crème brûlée'), 'utf8'));
    }
    res.writeHead(404).end();
  });
}

describe('charset disagreement warning (issue 30, item 7)', function () {
  this.timeout(120_000);
  let redis: RedisServer;
  let web: HttpServer;
  before(async () => {
    redis = await startRedis();
    web = await site();
  });
  after(async () => {
    await web?.close();
    await redis?.stop();
  });

  it('decodeChecked: a conflict only when header and meta disagree and the header garbles what the meta reads cleanly', () => {
    const utf8 = Buffer.from(page('Crème'), 'utf8');
    const wrong = decodeChecked(utf8, 'text/html; charset=iso-8859-1');
    assert.match(wrong.text, /CrÃ¨me/, 'the header wins, as in a browser');
    assert.deepEqual(wrong.conflict, { header: 'windows-1252', meta: 'UTF-8' });
    assert.equal(decodeChecked(utf8, 'text/html; charset=utf-8').conflict, null, 'agreeing');
    assert.equal(decodeChecked(utf8, 'text/html').conflict, null, 'no header charset: the meta is used');
    // Disagreeing, but the text is ASCII: both read the same, nothing garbled, nothing to say.
    assert.equal(decodeChecked(Buffer.from(page('Creme')), 'text/html; charset=iso-8859-1').conflict, null);
    // The other way round: latin1 bytes, header utf-8, meta latin1 — U+FFFD where the é was.
    const latin = Buffer.from(page('Crème').replace('utf-8', 'iso-8859-1'), 'latin1');
    assert.deepEqual(decodeChecked(latin, 'text/html; charset=utf-8').conflict, {
      header: 'UTF-8',
      meta: 'windows-1252',
    });
  });

  it('the fetch reports it on the page, the run summary and `status` warn naming the host and both charsets', async () => {
    const fetched = await fetchPage(`${web.url}/wrong`, {
      timeoutMs: 10_000,
      maxBytes: 1 << 20,
      maxRedirects: 3,
      headers: {},
      userAgent: 'test',
      privateAllowed: null,
    });
    assert.deepEqual(fetched.charsetConflict, { header: 'windows-1252', meta: 'UTF-8' });
    const good = await fetchPage(`${web.url}/`, {
      timeoutMs: 10_000,
      maxBytes: 1 << 20,
      maxRedirects: 3,
      headers: {},
      userAgent: 'test',
      privateAllowed: null,
    });
    assert.equal(good.charsetConflict, undefined);

    const task = await writeTask(`name: charset-warn
start: [${web.url}/]
rules:
  - name: any
    follow: [{ selector: a, to: any }]
    items: [{ type: page, fields: { title: h1 } }]
`);
    const { stdout, stderr } = await run(
      process.execPath,
      [CLI, 'run', task.file, '--workers', '1', '--concurrency', '2', '--redis', redis.url],
      { timeout: 90_000 },
    );
    const out = stdout + stderr;
    const host = new URL(web.url).host;
    const warnings = out.split('\n').filter((l) => /warning: host/.test(l));
    assert.equal(warnings.length, 1, out);
    assert.ok(
      warnings[0]!.includes(
        `warning: host ${host}: 2 pages say charset windows-1252 in Content-Type but utf-8 in <meta charset>`,
      ),
      out,
    );

    const status = await run(process.execPath, [CLI, 'status', task.file, '--redis', redis.url], { timeout: 30_000 });
    assert.match(
      status.stdout,
      new RegExp(`^warning: host ${host.replace(/\./g, '\\.')}: 2 pages say charset windows-1252`, 'm'),
      status.stdout,
    );
  });

  it('a site whose header and meta agree: no warning', async () => {
    const task = await writeTask(`name: charset-ok
start: [${web.url}/]
rules: [{ name: any, items: [{ type: page, fields: { title: h1 } }] }]
`);
    const { stdout, stderr } = await run(
      process.execPath,
      [CLI, 'run', task.file, '--workers', '1', '--redis', redis.url],
      { timeout: 90_000 },
    );
    assert.doesNotMatch(stdout + stderr, /warning/, stdout + stderr);
  });

  it("the designer's preview carries the warning for its banner", async () => {
    const source = new PageSource(mkdtempSync(join(tmpdir(), 'cs-charset-preview-')));
    const wrong = await source.load(`${web.url}/wrong`, null, { refetch: true });
    assert.equal(wrong.meta.warnings?.length, 1);
    assert.match(
      wrong.meta.warnings[0]!,
      /\/wrong: Content-Type says charset windows-1252 but the page's <meta> says utf-8/,
    );
    const good = await source.load(`${web.url}/`, null, { refetch: true });
    assert.equal(good.meta.warnings, undefined);
  });
});
