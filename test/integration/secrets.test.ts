import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { Redis } from 'ioredis';
import { expectedPages, serveSite, type SiteOptions, type SiteServer } from '../../src/demo/site';
import { startRedis, type RedisServer } from '../support/services';
import { skipBecause } from '../support/skip';
import { bookTask, writeTask } from '../support/crawl';

// Connection secrets never reach a command line: a process's arguments are public to every user of the machine
// (`ps aux`, /proc/PID/cmdline), its environment only to its owner. Real redis-server with a password, the CLI's
// `run` with real worker processes, every descendant's /proc/PID/cmdline read while they crawl.

const SITE: SiteOptions = { listPages: 2, perPage: 10, filler: 1 };
const SECRET = 'Hunter2-s3cret';

/** Every process below `root` (children, grandchildren...), from /proc/PID/stat's parent field. */
function descendants(root: number): number[] {
  const parent = new Map<number, number>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      // pid (comm) state ppid ...: comm may hold spaces and parentheses, so read past the last ')'.
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      parent.set(Number(name), ppid);
    } catch {
      // Gone meanwhile.
    }
  }
  const out: number[] = [];
  const walk = (pid: number) => {
    for (const [child, p] of parent) {
      if (p !== pid) continue;
      out.push(child);
      walk(child);
    }
  };
  walk(root);
  return out;
}

function cmdline(pid: number): string | null {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ');
  } catch {
    return null;
  }
}

describe('connection secrets (real Redis with a password, real worker processes)', function () {
  this.timeout(120_000);
  let redis: RedisServer;
  let site: SiteServer;
  let url: string;

  before(async function () {
    if (process.platform !== 'linux')
      skipBecause(
        this,
        `reads other processes' arguments and environment from /proc, which ${process.platform} has not`,
      );
    redis = await startRedis();
    const admin = new Redis(redis.url);
    await admin.call('ACL', 'SETUSER', 'crawler', 'on', `>${SECRET}`, '~*', '&*', '+@all');
    await admin.config('SET', 'requirepass', `${SECRET}-default`);
    admin.disconnect();
    url = `redis://crawler:${SECRET}@127.0.0.1:${redis.port}`;
    // Slow pages, one at a time: the crawl lasts long enough for its processes to be looked at.
    site = await serveSite(SITE, 0, undefined, 60);
  });
  after(async () => {
    await site?.close();
    await redis?.stop();
  });

  for (const how of ['environment', 'flag'] as const) {
    it(`no process that \`run\` starts has the Redis password in its command line (URL by ${how})`, async () => {
      const name = `secret-${how}`;
      const task = await writeTask(bookTask(site.url, name, 'politeness: { perHost: { concurrency: 1, delay: 0ms } }'));
      const args = [resolve('dist/cli.js'), 'run', task.file, '--workers', '2', '--concurrency', '2', '--fresh'];
      if (how === 'flag') args.push('--redis', url); // the user's own choice: only the CLI's command line has it
      const cli = spawn(process.execPath, args, {
        stdio: ['ignore', 'pipe', 'pipe'],
        env: { ...process.env, CRAWL_STUDIO_REDIS: how === 'environment' ? url : '' },
      });
      let out = '';
      cli.stdout.on('data', (b) => (out += b));
      cli.stderr.on('data', (b) => (out += b));
      const exited = new Promise<number | null>((r) => cli.on('exit', (c) => r(c)));
      let done = false;
      void exited.then(() => (done = true));
      const seen = new Map<number, string>();
      while (!done) {
        for (const pid of descendants(cli.pid!)) {
          const line = cmdline(pid);
          if (line) seen.set(pid, line);
        }
        await new Promise((r) => setTimeout(r, 50));
      }
      assert.equal(await exited, 0, out);
      assert.match(out, new RegExp(`pages fetched\\s+${expectedPages(site.url, SITE).length}\\b`), out);
      const workers = [...seen.values()].filter((l) => l.includes('worker.js'));
      assert.ok(workers.length >= 2, `the worker processes were seen: ${[...seen.values()].join('\n')}`);
      for (const [pid, line] of seen)
        assert.ok(!line.includes(SECRET), `process ${pid}'s command line holds the password: ${line}`);
      assert.ok(!out.includes(SECRET), `the CLI's output holds the password:\n${out}`);
    });
  }
});
