import { connectRedis } from '../../../src/redis/connect';
import { SqliteStore } from '../../../src/store/sqlite';
import { startWriter } from '../../../src/store/writer';

// An item writer in its own process, so the fault suite can SIGKILL it mid-batch. Environment:
//   REDIS_URL, STORE_PATH, TASK   what to drain where
//   BATCH                         items per batch
//   HOLD_AFTER_COMMIT_MS          after each commit, print "committed <n> claimed <c>" and wait this long before acknowledging:
//                                 a kill in that window leaves committed rows whose entries are still pending
// Prints "ready" once started and "acked <n>" after each acknowledged batch.

async function main(): Promise<void> {
  const env = process.env;
  const redis = connectRedis(env.REDIS_URL!);
  const store = new SqliteStore(env.STORE_PATH!);
  await store.open();
  const hold = Number(env.HOLD_AFTER_COMMIT_MS ?? 0);
  let batches = 0;
  let started: Awaited<ReturnType<typeof startWriter>> | null = null;
  const writer = await startWriter(redis, {
    task: env.TASK!,
    store,
    batchSize: Number(env.BATCH ?? 100),
    flushMs: 50,
    heartbeatMs: 250,
    backoff: { initialMs: 50, maxMs: 500 },
    log: (m) => process.stderr.write(`${m}\n`),
    afterCommit: async () => {
      batches++;
      // With the counters: a writer killed within a second never prints the periodic line below, and what it
      // took over from its predecessor must still be counted.
      process.stdout.write(`committed ${batches} claimed ${started?.counters().claimed ?? 0}\n`);
      if (hold > 0) await new Promise((r) => setTimeout(r, hold));
    },
  });
  started = writer;
  process.stdout.write('ready\n');
  setInterval(() => {
    const c = writer.counters();
    process.stdout.write(`acked ${c.batches} written ${c.written} claimed ${c.claimed}\n`);
  }, 1000).unref();
  process.on('SIGTERM', () => {
    void writer.stop().then(async () => {
      await store.close();
      redis.disconnect();
      process.exit(0);
    });
  });
}

main().catch((err) => {
  process.stderr.write(`writer-child: ${(err as Error).stack ?? err}\n`);
  process.exit(1);
});
