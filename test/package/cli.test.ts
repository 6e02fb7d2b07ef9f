import assert from 'node:assert/strict';
import { execFile, execFileSync, spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { allBooks, expectedPages, serveSite, type SiteOptions, type SiteServer } from '../../src/demo/site';
import { freePort, startRedis, type RedisServer } from '../support/services';
import { containerRecipe } from '../support/containerRecipe';
import { bookTask, session, writeTask } from '../support/crawl';

// The CLI as a fleet machine gets it: `npm pack` of the standalone package, installed into an empty folder
// (no network: the package has no dependencies, everything is bundled), and a worker run from it that joins a
// crawl on a shared Redis. And the same package as a library: a TypeScript program that imports it, compiled
// against its bundled types and run against a local site and redis-server.

const SITE: SiteOptions = { listPages: 2, perPage: 6 };

/** A pipeline as a user writes it from the README: typed, ES modules, against the installed package. */
const PIPELINE = `import { loadTask, runCrawl, TaskFileError, type CrawledItem, type TaskDefinition } from 'crawl-studio';

const [site, redis] = process.argv.slice(2) as [string, string];
const task = await loadTask({
  name: 'pipeline-books',
  start: [\`\${site}/\`],
  rules: [
    {
      name: 'list',
      match: [\`\${site}/\`, '/catalogue/page-*.html'],
      follow: [{ selector: 'ul.nav a, li.next a, header a', to: 'list' }, { selector: 'article.product_pod h3 a', to: 'book' }],
    },
    { name: 'book', items: [{ type: 'book', key: ['upc'], fields: { title: 'h1', upc: 'td.upc', url: { page: 'url' } } }] },
  ],
  canonical: { dropParams: ['ref', 'src'] },
});
const items: CrawledItem[] = [];
let progress = 0;
const crawl = runCrawl(task, { redis, workers: 1, signal: AbortSignal.timeout(100_000) });
crawl.on('item', (item) => items.push(item));
crawl.on('progress', (p) => (progress += p.stats ? 1 : 0));
const summary = await crawl;

let invalid = '';
try {
  await loadTask({ name: 'bad', start: ['nope'], rules: [{ name: 'r' }] });
} catch (err) {
  if (err instanceof TaskFileError) invalid = err.diagnostics[0]!.path;
}
// The types are the schema's: a page value that does not exist does not compile.
// @ts-expect-error 'uri' is not a page value
const wrong: TaskDefinition = { name: 'x', start: [], rules: [{ name: 'r', items: [{ type: 't', fields: { u: { page: 'uri' } } }] }] };
void wrong;
const book1 = items.find((i) => i.url.endsWith('/book-1.html'))?.data;
console.log(JSON.stringify({ pages: summary.stats.done, stored: summary.stored.rows, items: items.length, book1, progress, invalid }));
`;

describe('the crawl-studio npm package', function () {
  this.timeout(240_000);
  let bin: string;
  let dir: string;
  let tarball: string;
  let redis: RedisServer;
  let site: SiteServer;

  before(async function () {
    this.timeout(240_000);
    const out = execFileSync(process.execPath, ['scripts/package.mjs', 'cli'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    tarball = out.trim().split('\n').pop()!;
    assert.match(tarball, /crawl-studio-\d+\.\d+\.\d+\.tgz$/);
    dir = mkdtempSync(join(tmpdir(), 'cs-cli-install-'));
    writeFileSync(join(dir, 'package.json'), '{"name":"fleet-machine","private":true}');
    execFileSync('npm', ['install', '--offline', '--no-audit', '--no-fund', tarball], { cwd: dir, stdio: 'pipe' });
    bin = join(dir, 'node_modules', '.bin', 'crawl-studio');
    assert.ok(existsSync(bin), 'the package installs its crawl-studio bin');
    redis = await startRedis();
    site = await serveSite(SITE);
  });

  after(async () => {
    await site?.close();
    await redis?.stop();
  });

  it('prints its usage and validates a task file', async () => {
    const help = execFileSync(bin, ['--help'], { encoding: 'utf8' });
    assert.match(help, /crawl-studio worker <task.crawl.yaml>/);
    const task = await writeTask(bookTask(site.url, 'pkgvalid'));
    assert.match(execFileSync(bin, ['validate', task.file], { encoding: 'utf8' }), /: ok/);
  });

  it('runs a worker that joins a crawl on a shared Redis', async () => {
    const task = await writeTask(bookTask(site.url, 'pkgworker'));
    // The crawl is started elsewhere with no local workers: only the installed CLI's worker fetches.
    const s = session(task, redis.url, { workers: 0 });
    const running = s.run();
    const worker = spawn(bin, ['worker', task.file, '--redis', redis.url, '--concurrency', '4'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let log = '';
    worker.stdout.on('data', (b) => (log += b));
    const result = await running;
    worker.kill('SIGTERM');
    const code = await new Promise<number | null>((r) => worker.on('exit', (c) => r(c)));
    await s.close();
    assert.equal(code, 0, log);
    assert.equal(result.status.stats!.done, expectedPages(site.url, SITE).length);
    assert.match(log, /worker .* on redis:\/\/127\.0\.0\.1/);
  });

  it('is a library: a TypeScript program imports runCrawl and loadTask, compiles against its types and crawls', async () => {
    const manifest = JSON.parse(readFileSync(join(dir, 'node_modules', 'crawl-studio', 'package.json'), 'utf8'));
    assert.deepEqual(
      [manifest.main, manifest.types, manifest.exports['.']],
      ['dist/index.js', 'dist/index.d.ts', { types: './dist/index.d.ts', default: './dist/index.js' }],
    );
    const app = mkdtempSync(join(tmpdir(), 'cs-lib-app-'));
    cpSync(join(dir, 'node_modules'), join(app, 'node_modules'), { recursive: true });
    writeFileSync(join(app, 'package.json'), '{"name":"pipeline","private":true,"type":"module"}');
    writeFileSync(
      join(app, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          module: 'nodenext',
          moduleResolution: 'nodenext',
          target: 'es2022',
          strict: true,
          outDir: 'out',
          // The package's own declarations are checked too: they must stand on their own, as installed.
          skipLibCheck: false,
          types: ['node'],
          typeRoots: [resolve('node_modules/@types')],
        },
        files: ['pipeline.ts'],
      }),
    );
    writeFileSync(join(app, 'pipeline.ts'), PIPELINE);
    const tsc = spawnSync(process.execPath, [resolve('node_modules/typescript/bin/tsc'), '-p', app], {
      encoding: 'utf8',
    });
    assert.equal(tsc.status, 0, `the program compiles against the package's types:\n${tsc.stdout}${tsc.stderr}`);
    // Not spawnSync: the site is served by this process, which must keep answering while the program crawls it.
    const run = await promisify(execFile)(process.execPath, [join(app, 'out', 'pipeline.js'), site.url, redis.url], {
      cwd: app,
      encoding: 'utf8',
      timeout: 120_000,
    });
    const out = JSON.parse(run.stdout.trim().split('\n').pop()!);
    const books = allBooks(SITE);
    assert.equal(out.pages, expectedPages(site.url, SITE).length, run.stdout + run.stderr);
    assert.deepEqual(out.stored, [{ type: 'book', count: books.length }]);
    assert.equal(out.items, books.length);
    assert.deepEqual(out.book1, {
      title: books[0]!.title,
      upc: books[0]!.upc,
      url: `${site.url}/catalogue/book-1.html`,
    });
    assert.ok(out.progress > 0);
    assert.equal(out.invalid, 'start[0]');
    assert.ok(existsSync(join(app, 'pipeline-books.crawl.yaml')), 'the task object was written for the workers');
    // CommonJS programs get the same exports.
    const cjs = spawnSync(
      process.execPath,
      [
        '-e',
        "const m = require('crawl-studio'); console.log(typeof m.runCrawl, typeof m.loadTask, typeof m.TaskFileError)",
      ],
      { cwd: app, encoding: 'utf8' },
    );
    assert.equal(cjs.stdout.trim(), 'function function function', cjs.stderr);
  });

  // Issue 36, item 4: the worker's container recipe, run as far as a machine without a container runtime allows:
  // its RUN steps as plain shell in a folder standing for the image, then its ENTRYPOINT and CMD as the worker, with
  // the Redis target from the environment as the manifests give it. Probes, metrics and the SIGTERM drain answer.
  it('runs as deploy/worker/Containerfile says: its RUN steps, then a worker with probes, metrics and a drain', async () => {
    const recipe = containerRecipe(readFileSync('deploy/worker/Containerfile', 'utf8'));
    const image = mkdtempSync(join(tmpdir(), 'cs-image-'));
    const pkg = mkdtempSync(join(tmpdir(), 'cs-image-pkg-'));
    cpSync(tarball, join(pkg, tarball.split('/').pop()!));
    const inImage = (x: string) => x.replaceAll(recipe.workdir, image).replaceAll('/tmp/package', pkg);
    for (const step of recipe.run) {
      const r = spawnSync('sh', ['-c', inImage(step)], { encoding: 'utf8', env: { ...process.env, ...recipe.args } });
      assert.equal(r.status, 0, `RUN ${step}\n${r.stdout}${r.stderr}`);
    }
    const task = await writeTask(bookTask(site.url, 'pkgcontainer'));
    const [health, metrics] = [await freePort(), await freePort()];
    const argv = [...recipe.entrypoint, ...recipe.cmd]
      .map(inImage)
      .map((a) =>
        a === '/tasks/task.crawl.yaml' ? task.file : a === '8080' ? String(health) : a === '9464' ? String(metrics) : a,
      );
    const s = session(task, redis.url, { workers: 0 });
    const running = s.run();
    const worker = spawn(argv[0]!, argv.slice(1), {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, CRAWL_STUDIO_REDIS: redis.url },
    });
    let log = '';
    worker.stdout.on('data', (b) => (log += b));
    worker.stderr.on('data', (b) => (log += b));
    try {
      const get = async (port: number, path: string) => {
        const res = await fetch(`http://127.0.0.1:${port}${path}`);
        return { status: res.status, text: await res.text() };
      };
      let ready = { status: 0, text: '' };
      for (let i = 0; i < 600 && ready.status !== 200; i++) {
        ready = await get(health, '/readyz').catch(() => ({ status: 0, text: '' }));
        if (ready.status !== 200) await new Promise((r) => setTimeout(r, 100));
      }
      assert.equal(ready.status, 200, `readyz: ${ready.text}\n${log}`);
      const result = await running;
      assert.equal(result.status.stats!.done, expectedPages(site.url, SITE).length);
      const m = await get(metrics, '/metrics');
      assert.match(
        m.text,
        new RegExp(
          `crawl_studio_worker_pages_fetched_total\\{task="pkgcontainer"\\} ${expectedPages(site.url, SITE).length}\\b`,
        ),
        m.text.slice(0, 2000),
      );
      assert.equal((await get(health, '/healthz')).status, 200);
    } finally {
      worker.kill('SIGTERM');
      await s.close();
    }
    const code = await new Promise<number | null>((r) =>
      worker.exitCode !== null ? r(worker.exitCode) : worker.on('exit', (c) => r(c)),
    );
    assert.equal(code, 0, log);
    // JSON logs, as the CMD asks: every line an object.
    const lines = log.split('\n').filter((l) => l.trim());
    assert.ok(lines.length > 0 && lines.every((l) => l.startsWith('{')), lines.slice(0, 5).join('\n'));
    assert.ok(!log.includes(redis.url.replace(/^redis:\/\//, 'redis://:')), 'no password-bearing URL in the log');
  });

  it("a run whose store cannot open fails with the store's error, and the workers it started are gone", async () => {
    // The workers boot while the store opens (CLI run), so a store that fails must take them down again.
    const task = await writeTask(
      bookTask(site.url, 'pkgbadstore', 'store: { url: "postgres://nobody@127.0.0.1:1/nodb" }'),
    );
    const run = spawn(bin, ['run', task.file, '--workers', '2', '--redis', redis.url], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    run.stdout.on('data', (b) => (out += b));
    run.stderr.on('data', (b) => (out += b));
    const code = await new Promise<number | null>((r) => run.on('exit', (c) => r(c)));
    assert.equal(code, 1, out);
    assert.match(out, /cannot reach PostgreSQL postgres:\/\/nobody@127\.0\.0\.1:1\/nodb/);
    // A worker killed as the CLI exits may take a moment to leave the process table.
    const workersLeft = () =>
      execFileSync('ps', ['-eo', 'args'], { encoding: 'utf8' })
        .split('\n')
        .filter((l) => l.includes(task.file) && !l.includes(' run '));
    for (let i = 0; i < 40 && workersLeft().length > 0; i++) await new Promise((r) => setTimeout(r, 50));
    assert.deepEqual(workersLeft(), [], 'no worker process of this task is left');
  });
});
