import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expectedPages, serveSite, type SiteOptions, type SiteServer } from '../../src/demo/site';
import { startRedis, type RedisServer } from '../support/services';
import { bookTask, session, writeTask } from '../support/crawl';

// The CLI as a fleet machine gets it: `npm pack` of the standalone package, installed into an empty folder
// (no network: the package has no dependencies, everything is bundled), and a worker run from it that joins a
// crawl on a shared Redis.

const SITE: SiteOptions = { listPages: 2, perPage: 6 };

describe('the crawl-studio npm package', function () {
  this.timeout(240_000);
  let bin: string;
  let redis: RedisServer;
  let site: SiteServer;

  before(async function () {
    this.timeout(240_000);
    const out = execFileSync(process.execPath, ['scripts/package.mjs', 'cli'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
    const tarball = out.trim().split('\n').pop()!;
    assert.match(tarball, /crawl-studio-\d+\.\d+\.\d+\.tgz$/);
    const dir = mkdtempSync(join(tmpdir(), 'cs-cli-install-'));
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
    const worker = spawn(bin, ['worker', task.file, '--redis', redis.url, '--concurrency', '4'], { stdio: ['ignore', 'pipe', 'pipe'] });
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

  it('a run whose store cannot open fails with the store\'s error, and the workers it started are gone', async () => {
    // The workers boot while the store opens (CLI run), so a store that fails must take them down again.
    const task = await writeTask(bookTask(site.url, 'pkgbadstore', 'store: { url: "postgres://nobody@127.0.0.1:1/nodb" }'));
    const run = spawn(bin, ['run', task.file, '--workers', '2', '--redis', redis.url], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    run.stdout.on('data', (b) => (out += b));
    run.stderr.on('data', (b) => (out += b));
    const code = await new Promise<number | null>((r) => run.on('exit', (c) => r(c)));
    assert.equal(code, 1, out);
    assert.match(out, /cannot reach PostgreSQL postgres:\/\/nobody@127\.0\.0\.1:1\/nodb/);
    // A worker killed as the CLI exits may take a moment to leave the process table.
    const workersLeft = () => execFileSync('ps', ['-eo', 'args'], { encoding: 'utf8' }).split('\n').filter((l) => l.includes(task.file) && !l.includes(' run '));
    for (let i = 0; i < 40 && workersLeft().length > 0; i++) await new Promise((r) => setTimeout(r, 50));
    assert.deepEqual(workersLeft(), [], 'no worker process of this task is left');
  });
});
