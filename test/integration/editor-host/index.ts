import { launchCrawl } from '../../../src/run/launcher';
import { loadTaskFile } from '../../../src/workspace/taskFile';

// A stand-in for an editor window's extension host, in its own process, for test/integration/windowReload.test.ts:
// it drives a crawl with the launcher Start Crawl uses, and on a line "reload" on stdin it ends as the extension host
// does on a window reload: its subscriptions are disposed in order (WorkerManager: the workers' stopAll(5 s),
// CrawlManager: the launch's stop()), and it exits. Environment:
//   TASK_FILE, REDIS_URL, WORKER_SCRIPT   what to crawl where, with which worker
//   EXIT                                  'at-once': exit as soon as it is disposed (deactivate is synchronous), or
//                                         'after-stop': once the launch has stopped its workers too
// Prints "spawn <pid>" per worker process and "exit <pid> <code> <signal>" per worker exit it sees.

async function main(): Promise<void> {
  const env = process.env;
  const task = await loadTaskFile(env.TASK_FILE!);
  const launch = launchCrawl({
    task,
    redisUrl: env.REDIS_URL!,
    workers: 1,
    concurrency: 4,
    workerScript: env.WORKER_SCRIPT!,
    pollMs: 200,
    lockDurationMs: 2_000,
    stalledIntervalMs: 1_000,
  });
  launch.supervisor.on('spawn', (info) => process.stdout.write(`spawn ${info.pid}\n`));
  launch.supervisor.on('exit', (pid, code, signal) => process.stdout.write(`exit ${pid} ${code} ${signal}\n`));
  const ended = launch.done.then(
    () => undefined,
    () => undefined,
  );
  process.stdin.setEncoding('utf8');
  process.stdin.on('data', (d: string) => {
    if (!d.includes('reload')) return;
    void launch.supervisor.stopAll(5_000);
    launch.stop();
    if (env.EXIT === 'after-stop') void ended.then(() => process.exit(0));
    else setImmediate(() => process.exit(0));
  });
  await ended;
}

void main();
