import { readRun } from '../frontier/partitions';
import { connectRedis } from '../redis/connect';

// A standalone writer (`crawl-studio writer`) joins whatever run its task has on the Redis. Started with the fleet
// (a container beside the workers) before anyone ran the task, it exited 1 with "has never run on this Redis", and
// its orchestrator restarted it in a loop, where a worker waits for the first run and says so (worker/activityLog.ts).

/** Resolves once the task has a run on this Redis, having said once that it waits (in the worker's words). */
export async function waitForFirstRun(
  redisUrl: string,
  task: { readonly name: string; readonly file: string },
  say: (line: string) => void,
  everyMs = 1_000,
): Promise<void> {
  const redis = connectRedis(redisUrl);
  try {
    for (let said = false; !(await readRun(redis, task.name)); said = true) {
      if (!said)
        say(
          `${task.name}: never run on this Redis; waiting for a run (\`crawl-studio run ${task.file}\` or Start Crawl starts one)`,
        );
      await new Promise((r) => setTimeout(r, everyMs));
    }
  } finally {
    redis.disconnect();
  }
}
