import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { freePort, startRedis, type RedisServer } from '../support/services';
import { until } from '../support/until';

// `crawl-studio monitor` while its Redis is out of reach: every read waited for the reconnect with no end, so the
// page kept its last figures as if they were current and Prometheus's scrapes timed out with nothing said. Now the
// reads answer 503 at once, saying which Redis, why and for how long, and the log says the loss and the return.

const CLI = resolve('dist/cli.js');

async function get(url: string): Promise<{ status: number; text: string }> {
  // Bounded here so that a read that hangs fails the test, as it hung the page.
  const res = await fetch(url, { signal: AbortSignal.timeout(20_000) });
  return { status: res.status, text: await res.text() };
}

describe('crawl-studio monitor with its Redis out of reach', function () {
  this.timeout(120_000);
  let dir: string;
  let redis: RedisServer;
  let again: RedisServer | undefined;
  let monitor: ChildProcess | undefined;
  let log = '';
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'cs-redis-'));
    redis = await startRedis({ appendOnly: true, dir });
  });
  after(async () => {
    if (monitor && monitor.exitCode === null) monitor.kill('SIGKILL');
    await redis?.stop();
    await again?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('answers 503 saying why while Redis is gone, logs the loss and the return, and reads again once it is back', async () => {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    monitor = spawn(process.execPath, [CLI, 'monitor', '--redis', redis.url, '--port', String(port)], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    monitor.stdout!.on('data', (d: Buffer) => (log += d.toString()));
    monitor.stderr!.on('data', (d: Buffer) => (log += d.toString()));
    await until(
      'the monitor answers',
      async () => (await get(`${base}/healthcheck`).catch(() => null))?.status === 200,
    );
    assert.equal((await get(`${base}/api/tasks`)).status, 200);

    await redis.stop();
    await until('the monitor sees Redis gone', async () => log.includes(`lost ${redis.url}`));
    const why = new RegExp(
      `^Redis unavailable: ${redis.url.replace(/\./g, '\\.')}: connection (refused|closed), for \\d+ s; the monitor reconnects by itself$`,
    );
    for (const path of ['/api/tasks', '/api/workers', '/metrics']) {
      const r = await get(`${base}${path}`);
      assert.equal(r.status, 503, `${path}: ${r.text}`);
      assert.match((JSON.parse(r.text) as { error: string }).error, why, path);
    }
    const health = await get(`${base}/healthcheck`);
    assert.equal(health.status, 503);
    assert.match(health.text.trim(), why);
    // Said once a reconnect by the watch, not once a refused read.
    assert.doesNotMatch(log, /GET \/api\/tasks failed/, log);

    again = await startRedis({ appendOnly: true, port: redis.port, dir });
    await until('the reads answer again', async () => (await get(`${base}/api/tasks`)).status === 200);
    assert.match(log, new RegExp(`connected to ${redis.url.replace(/\./g, '\\.')} again after \\d+\\.\\d s`), log);
  });
});
