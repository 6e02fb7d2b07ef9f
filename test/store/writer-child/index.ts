import { connectRedis } from '../../../src/redis/connect';
import { openStore } from '../../../src/store/open';
import { SqliteStore } from '../../../src/store/sqlite';
import type { ItemStore } from '../../../src/store/types';
import { startWriter } from '../../../src/store/writer';

// A writer in its own process, so a test can SIGKILL it at any point. Configured by environment:
//   REDIS_URL, STORE_URL, TASK       what to drain where
//   BATCH                            items per batch
//   PAUSE_AFTER_COMMIT=1             after the first commit, print "committed" and hang before acknowledging
//   FLUSH_AND_EXIT=1                 drain the stream, print the counters as JSON, exit 0
// It prints "ready" once started and "batch <n>" after each commit, for the test to time its kill.

async function main(): Promise<void> {
  const env = process.env;
  const redis = connectRedis(env.REDIS_URL!);
  const storeUrl = env.STORE_URL!;
  let store: ItemStore;
  if (storeUrl.startsWith('sqlite:')) {
    store = new SqliteStore(storeUrl.slice('sqlite:'.length));
    await store.open();
  } else {
    store = await openStore(storeUrl, { task: env.TASK! });
  }
  let batches = 0;
  const writer = await startWriter(redis, {
    task: env.TASK!,
    store,
    batchSize: Number(env.BATCH ?? 500),
    flushMs: 50,
    heartbeatMs: 300,
    backoff: { initialMs: 50, maxMs: 500 },
    log: (m) => process.stderr.write(`${m}\n`),
    afterCommit: async () => {
      batches++;
      process.stdout.write(`batch ${batches}\n`);
      if (env.PAUSE_AFTER_COMMIT === '1') {
        process.stdout.write('committed\n');
        await new Promise(() => undefined);
      }
    },
  });
  process.stdout.write('ready\n');
  if (env.FLUSH_AND_EXIT === '1') {
    await writer.flush({ timeoutMs: 60_000 });
    await writer.stop();
    process.stdout.write(`counters ${JSON.stringify(writer.counters())}\n`);
    await store.close();
    redis.disconnect();
    process.exit(0);
  }
}

main().catch((err) => {
  process.stderr.write(`writer-child: ${(err as Error).stack ?? err}\n`);
  process.exit(1);
});
