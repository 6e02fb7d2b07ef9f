import type { Redis } from '../redis/connect';
import { partitionKeys, taskKeys } from '../frontier/keys';
import { layoutFor } from '../frontier/layout';
import type { ItemStore } from './types';
import { defaultConsumer, StreamWriter } from './streamWriter';
import type { WriterCounters, WriterHandle, WriterOptions } from './writerTypes';

// Starting a task's store writer: one StreamWriter (streamWriter.ts, where the writer's guarantees are told) per
// items stream, a stream per partition of the task.

/**
 * Creates the consumer group if needed, starts the heartbeat and the drain loop. A task spread over partitions
 * (frontier/layout.ts: a Redis Cluster) has an items stream per partition, each drained by a writer of its own under
 * the same consumer name, their store writes taken one at a time.
 */
export async function startWriter(redis: Redis, opts: WriterOptions): Promise<WriterHandle> {
  const layout = await layoutFor(redis, opts.task);
  if (layout.tags.length === 1) {
    const writer = new StreamWriter(redis, opts, taskKeys(opts.task).items);
    await writer.start();
    return writer;
  }
  const shared = { ...opts, consumer: opts.consumer ?? defaultConsumer(), store: oneAtATime(opts.store) };
  const writers = layout.tags.map((tag) => new StreamWriter(redis, shared, partitionKeys(opts.task, tag).items));
  for (const w of writers) await w.start();
  return new Writers(writers);
}

/** A store whose batch writes run one at a time, for the writers of a task's partitions sharing it. */
function oneAtATime(store: ItemStore): ItemStore {
  let tail: Promise<unknown> = Promise.resolve();
  const serial = <T>(fn: () => Promise<T>): Promise<T> => {
    const next = tail.then(fn, fn);
    tail = next.catch(() => undefined);
    return next;
  };
  return new Proxy(store, {
    get(target, prop, receiver) {
      const v = Reflect.get(target, prop, receiver) as unknown;
      if ((prop === 'writeBatch' || prop === 'writeErrors') && typeof v === 'function') {
        return (...args: unknown[]) => serial(() => (v as (...a: unknown[]) => Promise<unknown>).apply(target, args));
      }
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}

/** The writers of a task's partitions, as one. */
class Writers implements WriterHandle {
  readonly consumer: string;
  constructor(private readonly all: readonly StreamWriter[]) {
    this.consumer = all[0]!.consumer;
  }
  async flush(opts?: { timeoutMs?: number }): Promise<void> {
    await Promise.all(this.all.map((w) => w.flush(opts)));
  }
  async stop(): Promise<void> {
    await Promise.all(this.all.map((w) => w.stop()));
  }
  counters(): WriterCounters {
    const all = this.all.map((w) => w.counters());
    const sum = (k: keyof WriterCounters) => all.reduce((a, c) => a + (c[k] as number), 0);
    const batches = sum('batches');
    return {
      ...all[0]!,
      received: sum('received'),
      duplicates: sum('duplicates'),
      conflicts: sum('conflicts'),
      written: sum('written'),
      inserted: sum('inserted'),
      updated: sum('updated'),
      pages: sum('pages'),
      errors: sum('errors'),
      batches,
      lastBatchMs: Math.max(...all.map((c) => c.lastBatchMs)),
      avgBatchMs: batches > 0 ? all.reduce((a, c) => a + c.avgBatchMs * c.batches, 0) / batches : 0,
      retries: sum('retries'),
      claimed: sum('claimed'),
      lastError: all.find((c) => c.lastError)?.lastError ?? null,
      backingOff: all.some((c) => c.backingOff),
    };
  }
  async backlog(): Promise<number> {
    return (await Promise.all(this.all.map((w) => w.backlog()))).reduce((a, b) => a + b, 0);
  }
}
