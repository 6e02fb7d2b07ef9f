import type { Redis } from '../redis/connect';
import { taskKeys } from './keys';

// The store writers draining a task's items stream (store/streamWriter.ts), as the views see them: a `crawl-studio
// writer` finalizes a run as `run` and the editor do, without their lease (any number of writers is the design), so
// a run it will finish looked like one nobody drives. Each writer keeps a heartbeat key beside the stream, named by
// its consumer in the stream's group.

/** The group every store writer of a task reads the items stream in. */
export const STORE_GROUP = 'store';

/** The heartbeat key of the writer that reads `stream` as `consumer`: in the stream's hash slot. */
export function writerBeatKey(stream: string, consumer: string): string {
  return `${stream}:writer:${consumer}`;
}

/** A writer whose heartbeat is alive: where it runs. */
export interface LiveWriter {
  readonly host: string;
  readonly pid: number;
}

/** The writers alive on the task's items stream; none when the stream or its group does not exist yet. */
export async function readLiveWriters(redis: Redis, task: string): Promise<LiveWriter[]> {
  const stream = taskKeys(task).items;
  let consumers: unknown[][];
  try {
    consumers = (await redis.xinfo('CONSUMERS', stream, STORE_GROUP)) as unknown[][];
  } catch (err) {
    if (/no such key|NOGROUP/i.test(err instanceof Error ? err.message : '')) return [];
    throw err;
  }
  const names = consumers.map((flat) => String(flat[flat.indexOf('name') + 1]));
  if (names.length === 0) return [];
  const beats = await redis.mget(...names.map((n) => writerBeatKey(stream, n)));
  return beats.flatMap((b) => {
    if (!b) return [];
    const { host, pid } = JSON.parse(b) as Partial<LiveWriter>;
    return typeof host === 'string' && typeof pid === 'number' ? [{ host, pid }] : [];
  });
}
