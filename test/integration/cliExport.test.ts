import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { startRedis, type RedisServer, serveHttp, type HttpServer } from '../support/services';
import { writeTask } from '../support/crawl';

// Export from the terminal (issue 21, item 5): the summary's suggestion must work for a task with two item types,
// and `export | head -1` must end quietly with 0. The real CLI, a real site and redis-server.

const exec = promisify(execFile);
const CLI = resolve('dist/cli.js');
const ROWS = 3_000;

describe('CLI: export (issue 21, item 5)', function () {
  this.timeout(120_000);
  let redis: RedisServer;
  let web: HttpServer | undefined;
  let base: string;
  before(async () => {
    redis = await startRedis();
    // Far more than a pipe's 64 KB buffer, so `head` closes the pipe while the export still writes.
    const body = Array.from(
      { length: ROWS },
      (_, i) => `<li class="${i % 2 ? 'a' : 'b'}"><b>${i}</b><i>${'title '.repeat(20)}${i}</i></li>`,
    ).join('');
    web = await serveHttp((_req, res) => res.setHeader('content-type', 'text/html').end(`<ul>${body}</ul>`));
    base = web.url;
  });
  after(async () => {
    await web?.close();
    await redis?.stop();
  });

  it('suggests exports that work for two item types, and `export | head -1` exits 0 without an error', async () => {
    const task = await writeTask(`name: two-types
start: [${base}/]
rules:
  - name: list
    items:
      - type: alpha
        scope: li.a
        key: [n]
        fields: { n: b, title: i }
      - type: beta
        scope: li.b
        key: [n]
        fields: { n: b, title: i }
`);
    const run = await exec(process.execPath, [CLI, 'run', task.file, '--workers', '1', '--redis', redis.url]);
    assert.doesNotMatch(run.stdout, /--format csv --out items\.csv/, 'no single-CSV suggestion for two types');
    const suggested = [...run.stdout.matchAll(/crawl-studio export (\S+) (.*)$/gm)].map((m) =>
      m[2]!
        .replace(/\s+\(.*\)$/, '')
        .trim()
        .split(/\s+/),
    );
    assert.equal(suggested.length, 3, run.stdout);
    for (const args of suggested) {
      const r = await exec(process.execPath, [CLI, 'export', task.file, ...args], { cwd: resolve(task.file, '..') });
      assert.match(r.stderr, /exported 1,500 items|exported 3,000 items/, `${args.join(' ')}: ${r.stderr}`);
    }

    const child = spawn(
      'bash',
      ['-c', `set -o pipefail; "${process.execPath}" "${CLI}" export "${task.file}" | head -1`],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    let err = '';
    child.stdout.on('data', (b) => (out += b));
    child.stderr.on('data', (b) => (err += b));
    const code = await new Promise<number | null>((res) => child.on('exit', res));
    assert.equal(err, '', 'nothing on stderr');
    assert.equal(code, 0, "the export ended with 0 (pipefail: its status, not head's)");
    assert.equal(out.trim().split('\n').length, 1);
    assert.equal(JSON.parse(out)._type === 'alpha' || JSON.parse(out)._type === 'beta', true, out);

    const meta = await exec(process.execPath, [CLI, 'export', task.file, '--type', 'alpha', '--meta'], {
      maxBuffer: 64 * 1024 * 1024,
    });
    const first = JSON.parse(meta.stdout.split('\n')[0]!);
    assert.deepEqual(Object.keys(first), ['_key', '_url', '_fetched_at', 'n', 'title'], meta.stdout.slice(0, 300));
    assert.equal(first._url, `${base}/`);
    assert.ok(!Number.isNaN(Date.parse(first._fetched_at)));
  });

  it('suggests exports of the types the store holds, not of every type the task names', async () => {
    const site = await serveHttp((_req, res) =>
      res.setHeader('content-type', 'text/html').end('<ul><li><b>1</b></li><li><b>2</b></li></ul>'),
    );
    try {
      // No item of type `never` is stored (its required field matches nothing): `--type never` would fail.
      const task = await writeTask(
        `name: one-stored\nstart: [${site.url}/]\nrules:\n  - name: list\n    items:\n` +
          `      - { type: kept, scope: li, key: [n], fields: { n: b } }\n      - { type: never, scope: li, fields: { n: b, isbn: { selector: .isbn, required: true } } }\n`,
      );
      const run = await exec(process.execPath, [CLI, 'run', task.file, '--workers', '1', '--redis', redis.url]);
      assert.match(
        run.stdout,
        /^ {2}items stored {4}kept: 2 rows written by this run \(inserted or updated; 0 items of a key seen before, merged into its row, 2 errors recorded\)$/m,
        run.stdout,
      );
      const suggested = [...run.stdout.matchAll(/crawl-studio export (\S+) (.*)$/gm)].map((m) =>
        m[2]!.trim().split(/\s+/),
      );
      assert.deepEqual(suggested, [['--format', 'csv', '--out', 'items.csv']], run.stdout);
      const r = await exec(process.execPath, [CLI, 'export', task.file, ...suggested[0]!], {
        cwd: resolve(task.file, '..'),
      });
      assert.match(r.stderr, /exported 2 items \(kept\)/);
    } finally {
      await site.close();
    }
  });

  it("stores and exports fields that take the page's URL, status and fetch time (issue 21, item 5)", async () => {
    const site = await serveHttp((req, res) => {
      if (req.url === '/old/7') return res.writeHead(301, { location: '/books/7' }).end();
      res.setHeader('content-type', 'text/html').end(req.url === '/' ? '<a href="/old/7">seven</a>' : '<h1>Seven</h1>');
    });
    try {
      const task = await writeTask(`name: page-values
start: [${site.url}/]
rules:
  - name: home
    follow: [{ selector: a, to: book }]
  - name: book
    items:
      - type: book
        key: [id]
        fields:
          title: h1
          id: { page: finalUrl, regex: '/books/([0-9]+)' }
          url: { page: url }
          landed: { page: finalUrl }
          status: { page: status }
          fetched: { page: fetchedAt }
          rule: { page: rule }
`);
      await exec(process.execPath, [CLI, 'run', task.file, '--workers', '1', '--redis', redis.url]);
      const meta = await exec(process.execPath, [CLI, 'export', task.file, '--meta']);
      const rows = meta.stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l));
      assert.equal(rows.length, 1, meta.stdout);
      const { _fetched_at, ...row } = rows[0];
      // The values the worker's analysis thread took are the page record's: the same URL and time as --meta's.
      assert.equal(row.fetched, _fetched_at);
      assert.deepEqual(row, {
        _type: 'book',
        _key: '7',
        _url: `${site.url}/old/7`,
        title: 'Seven',
        id: '7',
        url: `${site.url}/old/7`,
        landed: `${site.url}/books/7`,
        status: '200',
        fetched: _fetched_at,
        rule: 'book',
      });
      const csv = await exec(process.execPath, [CLI, 'export', task.file, '--format', 'csv']);
      assert.equal(csv.stdout.split('\r\n')[0], 'title,id,url,landed,status,fetched,rule');
    } finally {
      await site.close();
    }
  });

  it('an export of a store that holds nothing says so on stderr, and writes nothing to stdout', async () => {
    const task = await writeTask(`name: never-run\nstart: [${base}/]\nrules:\n  - name: list\n`);
    const items = await exec(process.execPath, [CLI, 'export', task.file]);
    assert.equal(items.stdout, '');
    assert.match(items.stderr, /^no items to export: sqlite:\S+never-run\.sqlite holds none yet \(`crawl-studio run /);
    const changes = await exec(process.execPath, [CLI, 'export', task.file, '--changes']);
    assert.equal(changes.stdout, '');
    assert.match(changes.stderr, /^no item changes to export from sqlite:/);
  });

  it('says whether `run` resumed or started a new run (issue 21, item 7)', async () => {
    const task = await writeTask(`name: rerun\nstart: [${base}/]\nrules:\n  - name: list\n`);
    const first = await exec(process.execPath, [CLI, 'run', task.file, '--workers', '1', '--redis', redis.url]);
    assert.match(
      first.stdout,
      /^New run \S+: the task's first on this Redis\.$/m,
      'nothing was there to fetch again: ' + first.stdout,
    );
    const firstRun = /^New run (\S+):/m.exec(first.stdout)![1]!;
    const second = await exec(process.execPath, [CLI, 'run', task.file, '--workers', '1', '--redis', redis.url]);
    assert.match(
      second.stdout,
      new RegExp(
        `^New run \\S+, replacing run ${firstRun}: every page fetched again; \`run\` resumes a run only while it is unfinished\\.$`,
        'm',
      ),
      'a finished run is not resumed: the next run is new: ' + second.stdout,
    );
    assert.match(second.stdout, /pages fetched +1,/, second.stdout);
  });
});
