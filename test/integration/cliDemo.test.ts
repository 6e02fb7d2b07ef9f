import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { DEMO_PORT, DEMO_SITE } from '../../src/demo/site';
import { parseTask } from '../../src/core/task/parse';
import { lockPort } from '../support/portLock';
import { freePort } from '../support/services';
import { skipBecause } from '../support/skip';
import { until } from '../support/until';

// `crawl-studio demo` and `crawl-studio serve-demo`, the two commands a newcomer runs first (README, `npm run demo`),
// as the built CLI (dist/cli.js) with a real redis-server started by `run` and the real demo bookshop.

const CLI = resolve('dist/cli.js');

function cli(args: string[], cwd: string, timeoutMs: number): Promise<{ code: number | null; out: string }> {
  return new Promise((done) => {
    execFile(
      process.execPath,
      [CLI, ...args],
      { cwd, timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 },
      (err, stdout, stderr) => {
        const code = err ? (err as { code?: number | string | null }).code : 0;
        done({ code: typeof code === 'number' ? code : null, out: stdout + stderr });
      },
    );
  });
}

/** Holds 127.0.0.1:`port` (a listening socket) until closed; null when another process holds it already. */
function hold(port: number): Promise<Server | null> {
  return new Promise((r) => {
    const s = createServer();
    s.once('error', () => r(null));
    s.listen(port, '127.0.0.1', () => r(s));
  });
}

describe('CLI: demo and serve-demo', function () {
  this.timeout(240_000);
  let dir: string;
  let unlock: (() => void) | undefined;

  // The UI stage's first-run test, beside this stage, has the extension serve the demo shop on the same port.
  before(async function () {
    this.timeout(360_000);
    unlock = await lockPort(DEMO_PORT);
  });
  after(() => unlock?.());

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'cs-cli-demo-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('demo writes the demo task, serves the bookshop and crawls all of it with its own redis-server', async function () {
    const probe = await hold(DEMO_PORT);
    if (!probe) skipBecause(this, `port ${DEMO_PORT}, the demo's, is in use by another process`);
    await new Promise((r) => probe.close(r));
    const r = await cli(['demo', '--dir', 'shop', '--workers', '1'], dir, 180_000);
    assert.equal(r.code, 0, r.out.slice(-3000));
    assert.match(
      r.out,
      new RegExp(`Demo bookshop on http://127\\.0\\.0\\.1:${DEMO_PORT}/ — crawling it with .*books\\.crawl\\.yaml`),
    );
    const file = join(dir, 'shop', 'books.crawl.yaml');
    const { task, diagnostics } = parseTask(readFileSync(file, 'utf8'), file);
    assert.deepEqual(diagnostics, []);
    assert.equal(task!.start[0]!.url, `http://127.0.0.1:${DEMO_PORT}/`);
    assert.match(r.out, /pages failed +0\b/, r.out.slice(-3000));
    const books = DEMO_SITE.listPages * DEMO_SITE.perPage;
    assert.match(r.out, new RegExp(`items extracted +${books}\\b`), r.out.slice(-3000));
  });

  it('demo says so when its port is taken, and leaves the task file it wrote', async () => {
    // Taken by this test, or already by another process: either way the demo cannot serve on it.
    const held = await hold(DEMO_PORT);
    try {
      const r = await cli(['demo', '--dir', 'shop'], dir, 60_000);
      assert.notEqual(r.code, 0);
      assert.match(
        r.out,
        new RegExp(
          `cannot serve the demo site on 127\\.0\\.0\\.1:${DEMO_PORT} \\(EADDRINUSE\\); is another demo running\\?`,
        ),
        r.out,
      );
      assert.ok(existsSync(join(dir, 'shop', 'books.crawl.yaml')), 'the task file is written first');
    } finally {
      await new Promise((r) => (held ? held.close(r) : r(undefined)));
    }
  });

  it('serve-demo serves the bookshop on --port until Ctrl-C, then exits 0', async () => {
    const port = await freePort();
    const child = spawn(process.execPath, [CLI, 'serve-demo', '--port', String(port)], {
      cwd: dir,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (b: Buffer) => (out += b.toString()));
    child.stderr.on('data', (b: Buffer) => (out += b.toString()));
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    try {
      await until(
        `serve-demo to say where it serves (${out})`,
        () => out.includes(`Demo bookshop on http://127.0.0.1:${port}/ (Ctrl-C to stop)`),
        30_000,
      );
      const home = await fetch(`http://127.0.0.1:${port}/`);
      assert.equal(home.status, 200);
      assert.match(await home.text(), /<h1>Books to Crawl<\/h1>/);
      const list = await (await fetch(`http://127.0.0.1:${port}/catalogue/page-1.html`)).text();
      assert.equal(list.match(/<article class="product_pod">/g)?.length, DEMO_SITE.perPage);
    } finally {
      child.kill('SIGINT');
    }
    assert.equal(await exited, 0, out);
  });
});
