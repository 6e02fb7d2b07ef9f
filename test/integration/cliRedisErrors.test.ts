import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { freePort, startRedis, waitForPort } from '../support/services';
import { session, writeTask } from '../support/crawl';
import { EXIT } from '../../src/cli/exitCodes';
import { Redis } from 'ioredis';
import { tempDir } from '../support/tempDir';
import { until } from '../support/until';
import { failOver } from '../support/failover';

// Fail fast, say why (issue 31, item 2): a wrong Redis made `run`, `status` and `enqueue` print `Redis: …` and wait
// forever. Against a port where nothing listens and a real redis-server with `requirepass`, each command exits with
// the target, the cause and its exit code; `worker` waits, saying so on every attempt, and a SIGTERM ends it.
// No timing is asserted beyond a bound that proves "not hanging".

const run = promisify(execFile);
const CLI = resolve('dist/cli.js');
const NOT_HANGING_MS = 30_000;

async function cli(args: string[], env: Record<string, string> = {}): Promise<{ code: number; out: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [CLI, ...args], {
      timeout: NOT_HANGING_MS,
      env: { ...process.env, ...env },
    });
    return { code: 0, out: stdout + stderr };
  } catch (e) {
    const err = e as { code: number | null; killed?: boolean; stdout: string; stderr: string };
    assert.ok(
      !err.killed,
      `crawl-studio ${args.join(' ')} did not end within ${NOT_HANGING_MS / 1000} s:\n${err.stdout}${err.stderr}`,
    );
    return { code: err.code ?? -1, out: err.stdout + err.stderr };
  }
}

/** A `crawl-studio worker` on a port (or the target in $CRAWL_STUDIO_REDIS), its output so far, and a wait for a line of it. */
function startWorker(target: number | { env: string }, extra: readonly string[] = []) {
  const redis = typeof target === 'number' ? ['--redis', `redis://127.0.0.1:${target}`] : [];
  const child = spawn(process.execPath, [CLI, 'worker', taskFileOf(), ...redis, ...extra], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: typeof target === 'number' ? process.env : { ...process.env, CRAWL_STUDIO_REDIS: target.env },
  });
  let out = '';
  const waiters = new Set<() => void>();
  const onData = (b: Buffer) => {
    out += b.toString();
    for (const w of waiters) w();
  };
  child.stdout.on('data', onData);
  child.stderr.on('data', onData);
  const seen = (re: RegExp) =>
    new Promise<void>((res, rej) => {
      const t = setTimeout(() => (waiters.delete(check), rej(new Error(`not seen ${re}:\n${out}`))), NOT_HANGING_MS);
      const check = () => {
        if (!re.test(out)) return;
        clearTimeout(t);
        waiters.delete(check);
        res();
      };
      waiters.add(check);
      check();
    });
  const exited = new Promise<number | null>((r) => child.once('exit', (c) => r(c)));
  return { child, output: () => out, seen, exited };
}

let sharedTaskFile = '';
const taskFileOf = () => sharedTaskFile;

describe('CLI: a Redis that is not there, or refuses us, is said at once (issue 31, item 2)', function () {
  this.timeout(120_000);
  let taskFile: string;
  before(async () => {
    taskFile = sharedTaskFile = (
      await writeTask(`name: wrong-redis\nstart: [http://127.0.0.1:9/]\nrules: [{ name: page }]\n`)
    ).file;
  });

  it('nothing listening: run, status, enqueue, failures, retry, monitor exit 4 with the target and "connection refused"; export names its store', async () => {
    const port = await freePort();
    const target = `redis://127.0.0.1:${port}`;
    for (const args of [
      ['run', taskFile],
      ['status', taskFile],
      ['enqueue', taskFile, 'http://127.0.0.1:9/x'],
      ['failures', taskFile],
      ['retry', taskFile],
      ['monitor', '--port', '0'],
    ]) {
      const r = await cli([...args, '--redis', target]);
      assert.equal(r.code, EXIT.REDIS_UNREACHABLE, `${args[0]}: ${r.out}`);
      assert.match(
        r.out,
        new RegExp(`cannot connect to redis://127\\.0\\.0\\.1:${port}: connection refused; is Redis running there\\?`),
        `${args[0]}: ${r.out}`,
      );
    }
    // `export` reads the store, not Redis: a store that is not there is said the same way.
    const r = await cli(['export', taskFile, '--store', `postgres://u:pg-secret-31@127.0.0.1:${port}/db`]);
    assert.notEqual(r.code, 0, r.out);
    assert.match(r.out, new RegExp(`postgres://u:\\*\\*\\*@127\\.0\\.0\\.1:${port}/db.*ECONNREFUSED`), r.out);
    assert.ok(!r.out.includes('pg-secret-31'), r.out);
  });

  it('a name that does not resolve: exit 5, "name not resolved"', async () => {
    const r = await cli(['status', taskFile, '--redis', 'redis://no-such-host.invalid:6379']);
    assert.equal(r.code, EXIT.REDIS_NAME, r.out);
    assert.match(r.out, /cannot connect to redis:\/\/no-such-host\.invalid:6379: name not resolved/, r.out);
  });

  it('a database the server does not have, or an ACL user denied SELECT: exit 2 naming it, never a crawl in database 0', async () => {
    const redis = await startRedis();
    const admin = new Redis(redis.url);
    try {
      // ioredis only emits an error when SELECT is refused and goes on in database 0: these commands read and wrote
      // database 0 (`status` answered with another task's run there), and a worker crawled among its keys.
      await admin.set('cs-db0-marker', '1');
      const outOfRange = await cli(['status', taskFile, '--redis', `${redis.url}/99`]);
      assert.equal(outOfRange.code, EXIT.USAGE, outOfRange.out);
      assert.match(
        outOfRange.out,
        new RegExp(
          `cannot connect to redis://127\\.0\\.0\\.1:${redis.port}/99: database not available \\(ERR DB index is out of range\\); .*check the /N at the end of the target`,
        ),
        outOfRange.out,
      );
      // A long-lived worker does not wait for it either: waiting cannot add a database.
      const worker = await cli(['worker', taskFile, '--redis', `${redis.url}/99`]);
      assert.equal(worker.code, EXIT.USAGE, worker.out);
      assert.match(worker.out, /database not available/, worker.out);

      await admin.call('ACL', 'SETUSER', 'crawler-31', 'on', '>crawler-pass-31', '~*', '&*', '+@all', '-select');
      const denied = await cli(['run', taskFile], {
        CRAWL_STUDIO_REDIS: `redis://crawler-31:crawler-pass-31@127.0.0.1:${redis.port}/2`,
      });
      assert.equal(denied.code, EXIT.USAGE, denied.out);
      assert.match(denied.out, /database not available \(NOPERM .*'select' command/, denied.out);
      assert.ok(!denied.out.includes('crawler-pass-31'), denied.out);
      assert.deepEqual(await admin.keys('*'), ['cs-db0-marker'], 'nothing written to database 0');

      // The launcher, which the editor's Start Crawl and the library call without the CLI's check, refuses it too.
      const task = await writeTask(`name: wrong-db\nstart: [http://127.0.0.1:9/]\nrules: [{ name: page }]\n`);
      const s = session(task, `${redis.url}/99`, { workers: 1 });
      try {
        await assert.rejects(s.run(), /cannot connect to redis:\/\/127\.0\.0\.1:\d+\/99: database not available/);
      } finally {
        await s.close();
      }
      assert.deepEqual(await admin.keys('*'), ['cs-db0-marker'], 'nothing written to database 0 by the launcher');
    } finally {
      admin.disconnect();
      await redis.stop();
    }
  });

  it('an ACL user denied scripts: run, worker and the launcher refuse at once (exit 6); a worker denied them mid-run ends', async () => {
    const redis = await startRedis();
    const admin = new Redis(redis.url);
    try {
      await admin.call('ACL', 'SETUSER', 'noscript-31', 'on', '>noscript-pass-31', '~*', '&*', '+@all', '-@scripting');
      const env = { CRAWL_STUDIO_REDIS: `redis://noscript-31:noscript-pass-31@127.0.0.1:${redis.port}` };
      // Before, `worker` connected and logged BullMQ's NOPERM some 2,000 times a second, for ever; `run` printed it bare.
      for (const args of [
        ['worker', taskFile],
        ['run', taskFile],
      ]) {
        const r = await cli(args, env);
        assert.equal(r.code, EXIT.REDIS_AUTH, `${args[0]}: ${r.out}`);
        assert.match(
          r.out,
          /cannot connect to redis:\/\/noscript-31:\*\*\*@127\.0\.0\.1:\d+: permission denied \(NOPERM .*'evalsha' command\); the ACL user may not run a command or touch a key a crawl needs/,
          `${args[0]}: ${r.out}`,
        );
        assert.ok(!r.out.includes('noscript-pass-31'), r.out);
      }
      // Scripts allowed, but not on a crawl's keys.
      await admin.call('ACL', 'SETUSER', 'otherkeys-31', 'on', '>otherkeys-pass-31', '~other:*', '&*', '+@all');
      const keys = await cli(['worker', taskFile], {
        CRAWL_STUDIO_REDIS: `redis://otherkeys-31:otherkeys-pass-31@127.0.0.1:${redis.port}`,
      });
      assert.equal(keys.code, EXIT.REDIS_AUTH, keys.out);
      assert.match(keys.out, /permission denied \(NOPERM .*access one of the keys/, keys.out);
      const task = await writeTask(`name: noscript\nstart: [http://127.0.0.1:9/]\nrules: [{ name: page }]\n`);
      const s = session(task, env.CRAWL_STUDIO_REDIS, { workers: 1 });
      try {
        await assert.rejects(s.run(), /permission denied \(NOPERM/);
      } finally {
        await s.close();
      }

      // Allowed at the start, denied mid-run (an ACL changed under a running fleet): the worker ends, saying why.
      await admin.call('ACL', 'SETUSER', 'later-31', 'on', '>later-pass-31', '~*', '&*', '+@all');
      const {
        child: w,
        output,
        seen,
        exited,
      } = startWorker({
        env: `redis://later-31:later-pass-31@127.0.0.1:${redis.port}`,
      });
      try {
        await seen(/worker \S+ on redis:\/\//);
        await admin.call('ACL', 'SETUSER', 'later-31', '-@scripting');
        const code = await Promise.race([
          exited,
          new Promise<'still running'>((r) => setTimeout(r, NOT_HANGING_MS, 'still running')),
        ]);
        assert.equal(code, EXIT.REDIS_AUTH, output());
        assert.match(
          output(),
          /redis:\/\/later-31:\*\*\*@127\.0\.0\.1:\d+ refused a command mid-run: permission denied \(NOPERM .*'(eval|evalsha)' command\); the ACL user may not/,
          output(),
        );
        const lines = output().split('\n').length;
        assert.ok(lines < 50, `a few lines, not a flood: ${lines}`);
      } finally {
        w.kill('SIGKILL');
      }
    } finally {
      admin.disconnect();
      await redis.stop();
    }
  });

  it('requirepass and a wrong password (or none): exit 6, "authentication failed", the password never printed', async () => {
    const redis = await startRedis();
    try {
      const admin = new Redis(redis.url);
      await admin.config('SET', 'requirepass', 'the-right-one-31');
      admin.disconnect();
      for (const args of [
        ['status', taskFile],
        ['run', taskFile],
        ['enqueue', taskFile, 'http://127.0.0.1:9/x'],
      ]) {
        const r = await cli(args, { CRAWL_STUDIO_REDIS: `redis://:wrong-pass-31@127.0.0.1:${redis.port}` });
        assert.equal(r.code, EXIT.REDIS_AUTH, `${args[0]}: ${r.out}`);
        assert.match(
          r.out,
          new RegExp(`cannot connect to redis://:\\*\\*\\*@127\\.0\\.0\\.1:${redis.port}: authentication failed`),
          r.out,
        );
        assert.ok(!r.out.includes('wrong-pass-31'), `the password was printed:\n${r.out}`);
      }
      const none = await cli(['status', taskFile, '--redis', redis.url]);
      assert.equal(none.code, EXIT.REDIS_AUTH, none.out);
      assert.match(none.out, /authentication failed \(NOAUTH/, none.out);
    } finally {
      await redis.stop();
    }
  });

  it('the wrong deployment: a Cluster node named as one node, a plain node named as a Cluster, a node named as a sentinel: exit 8', async () => {
    const dir = tempDir('cs-cnode-');
    const cport = await freePort();
    const clusterNode = spawn(
      'redis-server',
      [
        '--port',
        String(cport),
        '--bind',
        '127.0.0.1',
        '--save',
        '',
        '--appendonly',
        'no',
        '--cluster-enabled',
        'yes',
        '--cluster-config-file',
        join(dir, 'nodes.conf'),
        '--dir',
        dir,
      ],
      { stdio: 'ignore' },
    );
    const plain = await startRedis();
    try {
      await waitForPort(cport);
      const a = await cli(['status', taskFile, '--redis', `redis://127.0.0.1:${cport}`]);
      assert.equal(a.code, EXIT.REDIS_TOPOLOGY, a.out);
      assert.match(
        a.out,
        /not the deployment named \(it is a Redis Cluster node: name it as redis\+cluster:\/\/\)/,
        a.out,
      );
      const b = await cli(['status', taskFile, '--cluster', `127.0.0.1:${plain.port}`]);
      assert.equal(b.code, EXIT.REDIS_TOPOLOGY, b.out);
      assert.match(
        b.out,
        new RegExp(`cannot connect to Redis Cluster seeds 127\\.0\\.0\\.1:${plain.port}: not the deployment named`),
        b.out,
      );
      const c = await cli(['status', taskFile, '--sentinel', `127.0.0.1:${plain.port}`, '--sentinel-master', 'm']);
      assert.equal(c.code, EXIT.REDIS_TOPOLOGY, c.out);
      assert.match(c.out, /answered as a Redis node, not a sentinel/, c.out);
    } finally {
      clusterNode.kill('SIGKILL');
      await plain.stop();
    }
  });

  it('a read-only replica: run, worker, writer and the launcher refuse at once naming its primary (exit 8); a write command says so', async () => {
    const primary = await startRedis();
    const dir = tempDir('cs-replica-');
    const port = await freePort();
    const replica = spawn(
      'redis-server',
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir],
      { stdio: 'ignore' },
    );
    // Connected at its first command, once the port answers.
    const admin = new Redis(`redis://127.0.0.1:${port}`, { lazyConnect: true });
    try {
      await waitForPort(port);
      await admin.call('REPLICAOF', '127.0.0.1', String(primary.port));
      const at = `redis://127.0.0.1:${port}`;
      const refusal = new RegExp(
        `cannot connect to redis://127\\.0\\.0\\.1:${port}: a read-only replica \\(its primary is 127\\.0\\.0\\.1:${primary.port}\\); a crawl writes to Redis: name its primary`,
      );
      // Before, `worker` logged BullMQ's READONLY thousands of times a second, `run` ended with Redis's bare words, and
      // `writer` waited for a run that could never be written.
      for (const command of ['worker', 'run', 'writer']) {
        const r = await cli([command, taskFile, '--redis', at]);
        assert.equal(r.code, EXIT.REDIS_TOPOLOGY, `${command}: ${r.out}`);
        assert.match(r.out, refusal, `${command}: ${r.out}`);
        assert.ok(r.out.split('\n').length < 10, `${command}, a few lines: ${r.out}`);
      }
      const s = session(
        await writeTask(`name: on-replica\nstart: [http://127.0.0.1:9/]\nrules: [{ name: page }]\n`),
        at,
        {
          workers: 1,
        },
      );
      try {
        await assert.rejects(s.run(), refusal);
      } finally {
        await s.close();
      }
      // The task's run on the primary, replicated: reading it from the replica works, acting on it says why not.
      const ran = await cli(['run', taskFile, '--redis', primary.url, '--workers', '1']);
      assert.equal(ran.code, 0, ran.out);
      await until('the run to reach the replica', async () => (await admin.exists('cs:{wrong-redis}:#meta')) === 1);
      const status = await cli(['status', taskFile, '--redis', at]);
      assert.equal(status.code, 0, status.out);
      assert.match(status.out, /^wrong-redis: run \S+, finished/m);
      for (const args of [
        ['pause', taskFile],
        ['enqueue', taskFile, 'http://127.0.0.1:9/other'],
      ]) {
        const r = await cli([...args, '--redis', at]);
        assert.equal(r.code, EXIT.REDIS_TOPOLOGY, `${args[0]}: ${r.out}`);
        assert.equal(
          r.out.trim(),
          'crawl-studio: Redis refused a write: a read-only replica; a crawl writes to Redis: name its primary (a replica gives it as master_host and master_port in INFO replication), or the sentinels (redis+sentinel://), which find the current primary',
        );
      }
    } finally {
      admin.disconnect();
      replica.kill('SIGKILL');
      await primary.stop();
    }
  });

  it('a primary demoted, or short of replicas, under a running worker: said once, the worker waits, and carries on once it takes writes', async () => {
    const a = await startRedis();
    const b = await startRedis();
    const [ca, cb] = [new Redis(a.url), new Redis(b.url)];
    const { child, output, seen, exited } = startWorker(a.port);
    try {
      await cb.call('REPLICAOF', '127.0.0.1', String(a.port));
      await seen(/worker \S+ on redis:\/\//);
      // Redis's coordinated failover: the worker's node is a replica now, with every key it had.
      await failOver(ca, cb, b.port);
      const demoted = new RegExp(
        `lost redis://127\\.0\\.0\\.1:${a.port}: it is a read-only replica now \\(a failover demoted it\\?\\); trying again until it takes writes`,
        'g',
      );
      await seen(demoted);
      // It writes its heartbeat every few seconds: each write meets READONLY and reconnects, said once.
      await new Promise((r) => setTimeout(r, 4_000));
      await failOver(cb, ca, a.port);
      const back = new RegExp(`connected to redis://127\\.0\\.0\\.1:${a.port} again after \\d+\\.\\d s`, 'g');
      await seen(back);
      assert.equal(output().match(demoted)?.length, 1, output());
      // A primary short of the replicas its min-replicas-to-write asks for refuses writes too (NOREPLICAS): the same.
      await ca.config('SET', 'min-replicas-to-write', '2');
      const short = new RegExp(
        `lost redis://127\\.0\\.0\\.1:${a.port}: it refuses writes while too few replicas are in reach \\(NOREPLICAS: its min-replicas-to-write\\); trying again until it takes writes`,
        'g',
      );
      await seen(short);
      await new Promise((r) => setTimeout(r, 4_000));
      await ca.config('SET', 'min-replicas-to-write', '0');
      await until('connected again, twice', () => (output().match(back)?.length ?? 0) === 2, 60_000);
      assert.equal(output().match(short)?.length, 1, output());
      assert.equal(child.exitCode, null, 'the worker waited, it did not exit');
      assert.ok(output().split('\n').length < 30, `a few lines, not a flood:\n${output()}`);
      child.kill('SIGTERM');
      assert.equal(await exited, 0, output());
    } finally {
      child.kill('SIGKILL');
      ca.disconnect();
      cb.disconnect();
      await a.stop();
      await b.stop();
    }
  });

  it("an evicting Redis (maxmemory and a policy other than noeviction) is said once, in the log's own form, by run and worker", async () => {
    const redis = await startRedis();
    const admin = new Redis(redis.url);
    try {
      await admin.config('SET', 'maxmemory', '100mb');
      await admin.config('SET', 'maxmemory-policy', 'allkeys-lru');
      const said = new RegExp(
        `redis://127\\.0\\.0\\.1:${redis.port} has maxmemory-policy allkeys-lru: once it holds maxmemory \\(100\\.0 MB, [\\d.]+ [KM]?B used now\\) it deletes any key \\(a crawl's queue, its seen links, its counters: pages are lost or fetched twice\\), without a word\\. Set maxmemory-policy noeviction`,
        'g',
      );
      // The task's page fails at once (nothing listens on port 9): the run ends by itself.
      const ran = await cli(['run', taskFile, '--redis', redis.url, '--workers', '2']);
      assert.equal(ran.code, 0, ran.out);
      assert.equal(ran.out.match(said)?.length, 1, ran.out);
      // BullMQ printed its own line besides, once per process, in no log format.
      assert.doesNotMatch(ran.out, /IMPORTANT! Eviction policy/, ran.out);
      await admin.config('SET', 'maxmemory-policy', 'volatile-lru');
      const w = startWorker({ env: redis.url }, ['--log-format', 'json']);
      try {
        await w.seen(/"event":"worker-started"/);
      } finally {
        w.child.kill('SIGTERM');
      }
      await w.exited;
      const lines = w.output().trim().split('\n');
      // Every line is JSON (a log shipper reads them all), the policy's among them.
      const events = lines.map((l) => JSON.parse(l) as { event?: string; level?: string; message?: string });
      const eviction = events.filter((e) => e.event === 'redis-eviction');
      assert.equal(eviction.length, 1, w.output());
      assert.equal(eviction[0]!.level, 'warn');
      assert.match(
        eviction[0]!.message!,
        /has maxmemory-policy volatile-lru: .* it deletes keys that expire \(a page's lock/,
      );
      // noeviction, or no maxmemory: nothing to say.
      await admin.config('SET', 'maxmemory-policy', 'noeviction');
      const quiet = await cli(['run', taskFile, '--redis', redis.url, '--workers', '1']);
      assert.doesNotMatch(quiet.out, /maxmemory-policy|Eviction policy/, quiet.out);
    } finally {
      admin.disconnect();
      await redis.stop();
    }
  });

  it('TLS: a private CA is refused saying how to trust it (exit 7); with NODE_EXTRA_CA_CERTS a crawl runs over TLS', async () => {
    const tls = resolve('test/fixtures/tls');
    const port = await freePort();
    const plain = await startRedis();
    const server = spawn(
      'redis-server',
      [
        '--port',
        '0',
        '--tls-port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--tls-cert-file',
        join(tls, 'server.pem'),
        '--tls-key-file',
        join(tls, 'server.key'),
        '--tls-ca-cert-file',
        join(tls, 'ca.pem'),
        '--tls-auth-clients',
        'no',
        '--save',
        '',
        '--appendonly',
        'no',
      ],
      { stdio: 'ignore' },
    );
    try {
      await waitForPort(port);
      const at = `rediss://127.0.0.1:${port}`;
      for (const command of ['status', 'worker']) {
        const r = await cli([command, taskFile, '--redis', at]);
        assert.equal(r.code, EXIT.REDIS_TLS, `${command}: ${r.out}`);
        assert.match(
          r.out,
          /TLS failed \(self-signed certificate in certificate chain\); the server's certificate is not one this machine accepts: for a private CA, give its PEM file as NODE_EXTRA_CA_CERTS=\/path\/to\/ca\.pem/,
          `${command}: ${r.out}`,
        );
      }
      // The scheme and the port disagree, each way: the other hint.
      const plainOnTls = await cli(['status', taskFile, '--redis', `redis://127.0.0.1:${port}`]);
      const tlsOnPlain = await cli(['status', taskFile, '--redis', `rediss://127.0.0.1:${plain.port}`]);
      for (const r of [plainOnTls, tlsOnPlain]) assert.notEqual(r.code, 0, r.out);
      assert.equal(tlsOnPlain.code, EXIT.REDIS_TLS, tlsOnPlain.out);
      assert.match(tlsOnPlain.out, /rediss:\/\/ needs a TLS port and redis:\/\/ a plain one/, tlsOnPlain.out);
      // Trusted: a whole crawl over TLS, its worker process inheriting the CA (its page is skipped: robots.txt cannot
      // be fetched, nothing listens on port 9).
      const ran = await cli(['run', taskFile, '--redis', at, '--workers', '1'], {
        NODE_EXTRA_CA_CERTS: join(tls, 'ca.pem'),
      });
      assert.equal(ran.code, 0, ran.out);
      assert.match(ran.out, /^Crawl 'wrong-redis' finished in /m, ran.out);
      assert.match(ran.out, /pages skipped +1 \(robots: 1\)/, ran.out);
    } finally {
      server.kill('SIGKILL');
      await plain.stop();
    }
  });

  it('`worker` waits for Redis, saying so on every attempt with its backoff, connects when it comes, and a SIGTERM while waiting ends it', async () => {
    const port = await freePort();
    const { child: worker, output, seen, exited } = startWorker(port);
    const out = () => output();
    await seen(
      new RegExp(
        `cannot connect to redis://127\\.0\\.0\\.1:${port}: connection refused; trying again in 2 s \\(attempt 2\\)`,
      ),
    );
    assert.match(out(), /trying again in 1 s \(attempt 1\)/);
    worker.kill('SIGTERM');
    const code = await Promise.race([exited, new Promise<'hung'>((r) => setTimeout(() => r('hung'), NOT_HANGING_MS))]);
    assert.equal(code, 0, `the worker ends at once on SIGTERM while waiting:\n${out()}`);
    assert.match(out(), /SIGTERM: stopped while waiting for Redis/);

    // And one that waits until Redis comes: it connects and starts.
    const port2 = await freePort();
    const { child: w2, output: out2, seen: seen2, exited: exited2 } = startWorker(port2);
    await seen2(/\(attempt 1\)/);
    const redis = await startRedis({ port: port2 });
    try {
      await seen2(new RegExp(`connected to redis://127\\.0\\.0\\.1:${port2}`));
      await seen2(/worker \S+ on redis:\/\/127\.0\.0\.1/);
      w2.kill('SIGTERM');
      assert.equal(await exited2, 0, out2());
    } finally {
      await redis.stop();
    }
  });
});

describe('CLI: a Redis lost mid-run is said, and the summary says how long it was gone (issue 31, item 2)', function () {
  this.timeout(180_000);

  it('run: "lost … trying again", "connected … again after", and "Redis was gone" in the summary', async () => {
    const { serveHttp } = await import('../support/services');
    const dir = tempDir('cs-lost-');
    let redis = await startRedis({ appendOnly: true, dir });
    const port = redis.port;
    let served = 0;
    // Slow pages, so the run is still going when Redis goes away.
    const site = await serveHttp((req, res) => {
      served++;
      res.setHeader('content-type', 'text/html');
      const links = req.url === '/' ? Array.from({ length: 12 }, (_, i) => `<a href="/p/${i}">p</a>`).join('') : '';
      setTimeout(() => res.end(`<h1>${req.url}</h1>${links}`), 250);
    });
    const task = await writeTask(`name: lost-redis
start: [${site.url}/]
request: { robots: false }
politeness: { perHost: { concurrency: 1 } }
rules:
  - name: page
    follow: [{ selector: a, to: page }]
`);
    const child = spawn(
      process.execPath,
      [CLI, 'run', task.file, '--workers', '1', '--concurrency', '1', '--redis', redis.url],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    child.stdout.on('data', (b) => (out += b));
    child.stderr.on('data', (b) => (out += b));
    const exited = new Promise<number | null>((r) => child.once('exit', (c) => r(c)));
    const until = async (what: string, f: () => boolean) => {
      const deadline = Date.now() + 60_000;
      while (!f()) {
        if (Date.now() > deadline) throw new Error(`${what}: not seen\n${out}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    };
    try {
      await until('a few pages', () => served >= 3);
      await redis.stop();
      await until('the loss said', () =>
        new RegExp(
          `redis: lost redis://127\\.0\\.0\\.1:${port}: connection refused; trying again in \\d+ s \\(attempt \\d+\\)`,
        ).test(out),
      );
      redis = await startRedis({ appendOnly: true, dir, port });
      assert.equal(await exited, 0, out);
      assert.match(
        out,
        new RegExp(`redis: connected to redis://127\\.0\\.0\\.1:${port} again after \\d+\\.\\d s`),
        out,
      );
      assert.match(out, /^ {2}Redis was gone {2}\d[\d.]* m?s in all during the run/m, out);
      assert.match(out, /pages fetched +13\b/, out);
    } finally {
      child.kill('SIGKILL');
      await site.close();
      await redis.stop();
    }
  });
});
