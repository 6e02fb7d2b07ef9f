import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WorkerSupervisor } from '../../src/run/supervisor';
import { startRedis, type RedisServer } from '../support/services';

// A worker that cannot start (its task file broken since the run began, a grant revoked) was replaced at once,
// each time: a run printed the same task-file error four times a second, spawning a Node process each time. Real
// processes: a script that says a task file's mistake and exits 2, as dist/worker.js does then.

describe('supervisor: workers that keep dying at their start are replaced with a growing delay', function () {
  this.timeout(60_000);
  let redis: RedisServer;
  let dir: string;
  before(async () => {
    redis = await startRedis();
    dir = mkdtempSync(join(tmpdir(), 'cs-respawn-'));
  });
  after(async () => {
    await redis?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Worker processes of `script`, replaced when they exit unexpectedly, as `run`'s are. */
  const supervisorOf = (script: string) =>
    new WorkerSupervisor({
      workerScript: script,
      taskFiles: [join(dir, 't.crawl.yaml')],
      redis: redis.url,
      concurrency: 1,
      restartOnCrash: true,
    });

  it('restarts the first at once, then waits 1, 2, 4 … s, saying so', async () => {
    const script = join(dir, 'broken-worker.js');
    writeFileSync(
      script,
      "process.stderr.write('/tasks/t.crawl.yaml:3:8: error: rules: must be a list, not \\'oops\\'\\n'); process.exit(2);\n",
    );
    const supervisor = supervisorOf(script);
    let spawns = 0;
    const lines: string[] = [];
    const causes: string[] = [];
    supervisor.on('spawn', () => spawns++);
    supervisor.on('log', (_pid, line) => lines.push(line));
    supervisor.on('exit', (_pid, _code, _signal, _expected, last) => causes.push(last.join('\n')));
    supervisor.start(1);
    // Spawns at about 0 s, at once after the first exit, then after 1 s and 2 s: the next waits 4 s more. A busy
    // machine spawns fewer in the window, never more; replaced at once, they were ~100.
    await new Promise((r) => setTimeout(r, 6_000));
    await supervisor.stopAll(1_000);
    const spawnsAtStop = spawns;
    await new Promise((r) => setTimeout(r, 1_500));
    assert.ok(spawns >= 2 && spawns <= 5, `spawns in 6 s: ${spawns}`);
    assert.equal(spawns, spawnsAtStop, 'no replacement after stopAll');
    assert.ok(
      lines.some((l) =>
        /2 workers in a row exited with an error within 10 s of their start: starting the next in 1 s/.test(l),
      ),
      lines.join('\n'),
    );
    assert.ok(causes.length >= 2, causes.join('\n---\n'));
  });

  it('replaces a worker killed by a signal at once, however young (a page that crashes its worker, SIGKILL)', async () => {
    const script = join(dir, 'idle-worker.js');
    writeFileSync(script, "process.stdout.write('up\\n'); setInterval(() => undefined, 1000);\n");
    const supervisor = supervisorOf(script);
    const delayed: string[] = [];
    supervisor.on('log', (_pid, line) => {
      if (/starting the next in/.test(line)) delayed.push(line);
    });
    supervisor.start(1);
    try {
      for (let kill = 0; kill < 4; kill++) {
        const [w] = supervisor.list();
        assert.ok(w, `a worker to kill (kill ${kill + 1})`);
        const replaced = new Promise<void>((r) => supervisor.once('spawn', () => r()));
        supervisor.kill(w.pid, 'SIGKILL');
        await replaced;
      }
      assert.deepEqual(delayed, []);
    } finally {
      await supervisor.stopAll(1_000);
    }
  });
});
