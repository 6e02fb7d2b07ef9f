import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { startRedis, type RedisServer, serveHttp, type HttpServer } from '../support/services';
import { writeTask } from '../support/crawl';

// `crawl-studio enqueue <task> --file` (issue 21, item 6; issue 22, item 7): bulk URLs from a file or stdin, through
// the frontier's discovery (dedup, scope, routing), counted at the end, bad lines named by number. The real CLI.

const exec = promisify(execFile);
const CLI = resolve('dist/cli.js');

describe('CLI: enqueue --file (issue 21, item 6)', function () {
  this.timeout(120_000);
  let redis: RedisServer;
  let web: HttpServer | undefined;
  let base: string;
  before(async () => {
    redis = await startRedis();
    web = await serveHttp((_req, res) => res.setHeader('content-type', 'text/html').end('<p>hi</p>'));
    base = web.url;
  });
  after(async () => {
    await web?.close();
    await redis?.stop();
  });

  const task = (name: string) =>
    writeTask(`name: ${name}
start: [${base}/]
scope: { deny: ["**/private/**"] }
rules:
  - name: page
    match: ["${base}/**"]
`);

  async function status(file: string): Promise<{ counts: { frontier: number; waiting: number; prioritized: number } }> {
    return JSON.parse((await exec(process.execPath, [CLI, 'status', file, '--json', '--redis', redis.url])).stdout);
  }

  it('counts enqueued, already seen and dropped by reason, and names bad lines by number', async () => {
    const t = await task('bulk-file');
    await exec(process.execPath, [CLI, 'run', t.file, '--workers', '1', '--redis', redis.url]);
    const list = join(dirname(t.file), 'urls.txt');
    writeFileSync(
      list,
      [
        `${base}/a`, // 1
        '', // 2
        '# a comment', // 3
        `${base}/`, // 4: the start page, seen in the run
        'not a url', // 5
        `https://example.com/elsewhere`, // 6: off-site
        `${base}/private/x`, // 7: scope.deny
        `${base}/a`, // 8: a repeat of line 1
        `  ${base}/b  `, // 9: trimmed
        `${base}/${'x'.repeat(2100)}`, // 10: too long
      ].join('\n'),
    );
    const r = await exec(process.execPath, [CLI, 'enqueue', t.file, '--file', list, '--redis', redis.url]).catch(
      (e) => e,
    );
    assert.equal(r.code, 1, 'bad lines make the exit status 1');
    assert.match(
      r.stdout,
      /^2 enqueued, 2 already seen, 2 dropped \((offsite: 1, denied: 1|denied: 1, offsite: 1)\), 2 bad lines$/m,
      r.stdout + r.stderr,
    );
    assert.match(
      r.stdout,
      /^No worker is running: start the crawl to fetch them \(`crawl-studio run \S+` resumes the run\)\.$/m,
      r.stdout,
    );
    assert.match(r.stderr, /urls\.txt:5: invalid \(not a valid URL\): not a url/, r.stderr);
    assert.match(r.stderr, /urls\.txt:10: too-long \(over 2048 characters\): .*… \(2,1\d\d characters\)/, r.stderr);
    const s = await status(t.file);
    // No worker runs: they wait in the frontier, not as jobs.
    assert.equal(s.counts.frontier + s.counts.waiting + s.counts.prioritized, 2, 'the two new URLs are in the queue');
  });

  it('streams thousands of lines from stdin (-) in batches, all deduplicated', async () => {
    const t = await task('bulk-stdin');
    await exec(process.execPath, [CLI, 'run', t.file, '--workers', '1', '--redis', redis.url]);
    const lines = Array.from({ length: 2_500 }, (_, i) => `${base}/p${i % 2_100}`).join('\n') + '\n';
    const child = spawn(process.execPath, [CLI, 'enqueue', t.file, '--file', '-', '--redis', redis.url], {
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (b) => (out += b));
    child.stderr.on('data', (b) => (out += b));
    child.stdin.end(lines);
    const code = await new Promise<number | null>((res) => child.on('exit', res));
    assert.equal(code, 0, out);
    assert.match(out, /^2,100 enqueued, 400 already seen, 0 dropped, 0 bad lines$/m, out);
    const s = await status(t.file);
    assert.equal(s.counts.frontier + s.counts.waiting + s.counts.prioritized, 2_100);
  });
});
