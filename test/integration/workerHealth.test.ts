import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { connect, createServer, type AddressInfo, type Server } from 'node:net';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, serveHttp, startRedis, type HttpServer, type RedisServer } from '../support/services';
import { session, WORKER_SCRIPT, writeTask } from '../support/crawl';
import { linkedPagesTask } from '../support/linkedPagesTask';
import { until } from '../support/until';
import { connectRedis } from '../../src/redis/connect';
import { isReplyError } from '../../src/redis/check';
import type { CrawlTask } from '../../src/core/task/model';

// Issue 36, item 4: a worker an orchestrator runs says when it is live and ready (--health), and a SIGTERM drains it
// within the grace period (--drain-timeout): a page that never ends does not keep it alive past the bound.

async function probe(port: number, path: string): Promise<{ status: number; why: string } | null> {
  try {
    const res = await fetch(`http://127.0.0.1:${port}${path}`);
    return { status: res.status, why: ((await res.json()) as { why: string }).why };
  } catch {
    return null;
  }
}

interface Spawned {
  readonly child: ChildProcess;
  /** Its stdout and stderr, a line each. */
  readonly lines: string[];
  readonly exited: Promise<number | null>;
}

/** `node dist/worker.js ARGS` against REDIS (in the environment, as a pod gets it), its output kept. */
function startWorker(args: readonly string[], redisUrl: string): Spawned {
  const child = spawn(process.execPath, [WORKER_SCRIPT, ...args], {
    env: { ...process.env, CRAWL_STUDIO_REDIS: redisUrl },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  child.stdout.on('data', (b: Buffer) => lines.push(...b.toString().split('\n')));
  child.stderr.on('data', (b: Buffer) => lines.push(...b.toString().split('\n')));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  return { child, lines, exited };
}

/** A site whose pages never answer (each request kept in `hung`), and a task of it whose requests wait 10 minutes. */
async function hungSite(name: string): Promise<{ site: HttpServer; hung: ServerResponse[]; task: CrawlTask }> {
  const hung: ServerResponse[] = [];
  const site = await serveHttp((req: IncomingMessage, res: ServerResponse) => {
    if (req.url === '/robots.txt') return void res.writeHead(404).end();
    hung.push(res);
  });
  const task = await writeTask(
    linkedPagesTask({ name, start: [`${site.url}/`], perHost: { concurrency: 1 } }).replace(
      'rules:',
      'request: { timeout: 600s }\nrules:',
    ),
  );
  return { site, hung, task };
}

/**
 * A Redis that is there for one connection only, as when it stops (or a partition cuts it off) right after a worker's
 * connection check: the first connection is relayed to `redisPort`, and once it closes the port is closed.
 */
async function redisForOneConnection(redisPort: number): Promise<{ url: string; server: Server }> {
  const server = createServer((client) => {
    server.close();
    const upstream = connect(redisPort, '127.0.0.1');
    client.pipe(upstream).pipe(client);
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `redis://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

describe('a worker in an orchestrator: health, readiness and a bounded drain (issue 36)', function () {
  this.timeout(120_000);
  let redis: RedisServer;
  let site: HttpServer | undefined;
  let worker: ChildProcess | undefined;
  before(async () => (redis = await startRedis()));
  after(async () => {
    if (worker && worker.exitCode === null) worker.kill('SIGKILL');
    await site?.close();
    await redis?.stop();
  });

  it('is ready once connected, not ready while draining, and exits 0 within --drain-timeout with a page that never ends', async () => {
    const drained = await hungSite('drained');
    site = drained.site;
    const { hung, task } = drained;
    // The run, driven without local workers: the worker below is the only one, as a pod would be.
    const s = session(task, redis.url, { workers: 0 });
    const running = s.run();
    const port = await freePort();
    const w = startWorker([task.file, '--health', `127.0.0.1:${port}`, '--drain-timeout', '2s'], redis.url);
    worker = w.child;
    const { lines, exited } = w;

    const ready = await until('/readyz 200', async () =>
      (await probe(port, '/readyz'))?.status === 200 ? probe(port, '/readyz') : null,
    );
    assert.equal(ready.why, 'connected and working');
    assert.equal((await probe(port, '/healthz'))?.status, 200);
    await until('the page in flight', async () => hung.length > 0);

    worker.kill('SIGTERM');
    const draining = await until('/readyz 503', async () => {
      const p = await probe(port, '/readyz');
      return p?.status === 503 ? p : null;
    });
    assert.equal(draining.why, 'draining: finishing its pages, taking no more');
    // The page's request times out after 10 minutes, past this test's own timeout: a drain that waited for it fails here.
    assert.equal(await exited, 0, lines.join('\n'));
    assert.ok(
      lines.some((l) => /drain timeout \(2 s\): leaving in-flight jobs to other workers/.test(l)),
      lines.join('\n'),
    );
    for (const r of hung) r.destroy();
    s.stop();
    await running;
    await s.close();
  });

  it('answers its probes while it waits for Redis: live, not ready, and why', async () => {
    const redisPort = await freePort();
    const task = await writeTask(
      linkedPagesTask({ name: 'waiting', start: ['http://127.0.0.1:9/'], perHost: { concurrency: 1 } }),
    );
    const port = await freePort();
    const w = startWorker([task.file, '--health', `127.0.0.1:${port}`], `redis://127.0.0.1:${redisPort}`);
    worker = w.child;
    const { lines } = w;
    let later: RedisServer | undefined;
    try {
      // Before, nothing listened until Redis answered: the liveness probe failed and the pod was restarted in a loop.
      const waiting = await until('/readyz 503, saying why', async () => {
        const p = await probe(port, '/readyz');
        return p?.status === 503 && p.why.startsWith('cannot connect') ? p : null;
      });
      assert.match(
        waiting.why,
        new RegExp(
          `^cannot connect to redis://127\\.0\\.0\\.1:${redisPort}: connection refused; trying again in \\d+ s \\(attempt \\d+\\)$`,
        ),
      );
      assert.equal((await probe(port, '/healthz'))?.status, 200, lines.join('\n'));
      later = await startRedis({ port: redisPort });
      const ready = await until('/readyz 200 once Redis is there', async () => {
        const p = await probe(port, '/readyz');
        return p?.status === 200 ? p : null;
      });
      assert.equal(ready.why, 'connected and working');
    } finally {
      worker.kill('SIGKILL');
      await later?.stop();
    }
  });

  for (const signals of [['SIGTERM'], ['SIGINT', 'SIGINT']] as const) {
    it(`stops on ${signals.join(' then ')} while its start waits for a Redis gone after the connection check`, async () => {
      const task = await writeTask(
        linkedPagesTask({ name: 'gone-at-start', start: ['http://127.0.0.1:9/'], perHost: { concurrency: 1 } }),
      );
      const once = await redisForOneConnection(redis.port);
      const port = await freePort();
      const w = startWorker([task.file, '--health', `127.0.0.1:${port}`], once.url);
      worker = w.child;
      const { lines, exited } = w;
      try {
        await until(
          'the start under way',
          async () => (await probe(port, '/readyz'))?.why === 'connected to Redis; starting',
        );
        for (const [i, signal] of signals.entries()) {
          const seen = lines.length;
          worker.kill(signal);
          // One at a time: two of the same signal sent together may reach the process as one.
          if (i < signals.length - 1) {
            await until(`${signal} heard`, async () =>
              lines.slice(seen).some((l) => l.includes(`${signal}: stopping once the start completes (at most 10 s)`)),
            );
          }
        }
        // Before, a signal that came while the worker started waited for the start to complete, which it never did.
        const code = await Promise.race([
          exited,
          new Promise<'still running'>((r) => setTimeout(r, 40_000, 'still running')),
        ]);
        if (signals.length === 1) {
          assert.equal(code, 0, lines.join('\n'));
          assert.ok(
            lines.some((l) =>
              /SIGTERM: stopped while starting, before taking any page \(the start, which waits on Redis, had not completed in 10 s\)/.test(
                l,
              ),
            ),
            lines.join('\n'),
          );
        } else {
          assert.equal(code, 130, lines.join('\n'));
          assert.ok(
            lines.some((l) => /SIGINT again: stopped while starting, before taking any page/.test(l)),
            lines.join('\n'),
          );
        }
      } finally {
        worker.kill('SIGKILL');
        once.server.close();
      }
    });
  }

  it('refuses a --health or --metrics-port port in use, naming the flag, before it takes a page', async () => {
    const task = await writeTask(
      linkedPagesTask({ name: 'port-taken', start: ['http://127.0.0.1:9/'], perHost: { concurrency: 1 } }),
    );
    const taken = createServer();
    await new Promise<void>((r) => taken.listen(0, '127.0.0.1', r));
    const port = (taken.address() as AddressInfo).port;
    try {
      for (const [flags, said] of [
        [['--health', `127.0.0.1:${port}`], `--health: cannot listen on 127.0.0.1:${port} (EADDRINUSE)`],
        [
          ['--metrics-port', String(port), '--metrics-bind', '127.0.0.1'],
          `--metrics-port: cannot listen on 127.0.0.1:${port} (EADDRINUSE)`,
        ],
      ] as const) {
        const w = startWorker([task.file, ...flags], redis.url);
        // dist/worker.js exits 2 on any error (the CLI's `worker`, which the container runs, 1).
        assert.equal(await w.exited, 2, w.lines.join('\n'));
        assert.ok(
          w.lines.some((l) => l.includes(said)),
          w.lines.join('\n'),
        );
        // It said so before it started: the metrics port was opened after the worker took pages.
        assert.ok(!w.lines.some((l) => /worker \S+ on redis:/.test(l)), w.lines.join('\n'));
      }
    } finally {
      taken.close();
    }
  });

  it('tells a refusal from Redis from a lost connection (a refused heartbeat keeps the worker live)', async () => {
    const client = connectRedis(redis.url);
    const gone = connectRedis(`redis://127.0.0.1:${await freePort()}`, {
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    try {
      await client.config('SET', 'maxmemory', '1');
      const refusal = await client.hset('cs-health-probe', 'a', 'b').then(
        () => null,
        (e: unknown) => e,
      );
      assert.ok(refusal instanceof Error && /^OOM/.test(refusal.message), String(refusal));
      assert.equal(isReplyError(refusal), true);
      const lost = await gone.ping().then(
        () => null,
        (e: unknown) => e,
      );
      assert.ok(lost instanceof Error, String(lost));
      assert.equal(isReplyError(lost), false, String(lost));
    } finally {
      await client.config('SET', 'maxmemory', '0');
      client.disconnect();
      gone.disconnect();
    }
  });

  it("ends a drain once Redis has been out of reach longer than the jobs' locks, with no --drain-timeout", async () => {
    // Its own Redis, stopped mid-drain and started again (append-only, same port) so the run can end.
    const dir = mkdtempSync(join(tmpdir(), 'cs-redis-'));
    const own = await startRedis({ appendOnly: true, dir });
    const { site: lostSite, hung, task } = await hungSite('unreachable');
    let again: RedisServer | undefined;
    let lines: string[] = [];
    try {
      const s = session(task, own.url, { workers: 0 });
      const running = s.run();
      const port = await freePort();
      const w = startWorker([task.file, '--lock-duration', '3000', '--health', `127.0.0.1:${port}`], own.url);
      worker = w.child;
      lines = w.lines;
      const exited = w.exited;
      await until('the page in flight', async () => hung.length > 0);

      await own.stop();
      await until('the worker sees Redis gone', async () => lines.some((l) => l.includes(`lost ${own.url}`)));
      // Not ready, but live: a liveness probe that failed now would restart every worker of the fleet at once, for a
      // Redis that a restart does not bring back.
      const notReady = await until('/readyz 503', async () => {
        const p = await probe(port, '/readyz');
        return p?.status === 503 ? p : null;
      });
      assert.match(notReady.why, /^Redis out of reach for \d+ s: reconnecting \(a restart would not bring it back\)$/);
      assert.equal((await probe(port, '/healthz'))?.status, 200);
      worker.kill('SIGTERM');
      // Before, the drain waited for Redis with no end: the page in flight could not be finished.
      const code = await Promise.race([
        exited,
        new Promise<'still running'>((r) => setTimeout(r, 60_000, 'still running')),
      ]);
      assert.equal(code, 0, lines.join('\n'));
      assert.ok(
        lines.some((l) =>
          /Redis out of reach while draining, past the jobs' locks: leaving in-flight jobs to other workers/.test(l),
        ),
        lines.join('\n'),
      );

      // BullMQ's connections report the outage on every reconnect attempt: said once (worker/repeatedLines.ts).
      const refused = lines.filter((l) => /worker error on 'unreachable': .*ECONNREFUSED/.test(l));
      assert.ok(refused.length <= 1, refused.join('\n'));

      again = await startRedis({ appendOnly: true, port: own.port, dir });
      for (const r of hung) r.destroy();
      s.stop();
      await running;
      await s.close();
    } finally {
      await lostSite.close();
      await own.stop();
      await again?.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
