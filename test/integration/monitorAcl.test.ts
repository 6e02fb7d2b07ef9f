import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';
import { Redis } from 'ioredis';
import { freePort, startRedis, type RedisServer } from '../support/services';
import { until } from '../support/until';
import { TASKS_KEY } from '../../src/frontier/keys';

// `crawl-studio monitor` under an ACL user that may read and not run scripts (README, Which Redis): its pages serve,
// and an action answered 500 with Redis's bare "NOPERM …". It is a 403 now, in the words of the connection check,
// with the grants an action needs.

const CLI = resolve('dist/cli.js');

describe('crawl-studio monitor under a read-only ACL user', function () {
  this.timeout(60_000);
  let redis: RedisServer;
  let monitor: ChildProcess | undefined;
  before(async () => (redis = await startRedis()));
  after(async () => {
    if (monitor && monitor.exitCode === null) monitor.kill('SIGKILL');
    await redis?.stop();
  });

  it('serves its pages, and refuses an action with 403 naming the grants it needs', async () => {
    const admin = new Redis(redis.url);
    await admin.sadd(TASKS_KEY, 'acl');
    await admin.call(
      'ACL',
      'SETUSER',
      'reader',
      'on',
      '>reader-pass',
      '~*',
      '&*',
      '+@read',
      '+ping',
      '+info',
      '+client',
      '+select',
    );
    admin.disconnect();
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    let log = '';
    monitor = spawn(process.execPath, [CLI, 'monitor', '--port', String(port)], {
      env: { ...process.env, CRAWL_STUDIO_REDIS: `redis://reader:reader-pass@127.0.0.1:${redis.port}` },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    monitor.stdout!.on('data', (d: Buffer) => (log += d.toString()));
    monitor.stderr!.on('data', (d: Buffer) => (log += d.toString()));
    const token = await until('the monitor and its token', () => /token \(shown once\): (\S+)/.exec(log)?.[1]);
    const tasks = await fetch(`${base}/api/tasks`);
    assert.equal(tasks.status, 200, await tasks.text());

    const res = await fetch(`${base}/api/tasks/acl/retry`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ reason: 'http-404' }),
    });
    const body = (await res.json()) as { error: string };
    assert.equal(res.status, 403, body.error);
    assert.match(
      body.error,
      /^permission denied \(NOPERM .*'(eval|evalsha)' command\); the ACL user may not run a command or touch a key a crawl needs/,
    );
    assert.ok(!body.error.includes('reader-pass') && !log.includes('reader-pass'), log);
  });
});
