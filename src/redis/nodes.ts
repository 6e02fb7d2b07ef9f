import type { Redis as NodeClient } from 'ioredis';
import { isCluster, type Redis } from './connect';

// What needs one node's view of Redis, for a node and for a cluster alike. On a cluster SCAN sees only the node it
// is sent to, a multi-key command must stay within one slot, and CLIENT/INFO answer for whichever node gets them.

/** Keys matching `match`, in batches, from every primary of a cluster (each holds only its own slots' keys). */
export async function* scanKeys(redis: Redis, match: string, count = 1000): AsyncIterable<string[]> {
  // A cluster client knows its nodes once it has read the slot map: before that nodes() is empty.
  if (isCluster(redis) && redis.status !== 'ready') await redis.ping();
  const nodes: NodeClient[] = isCluster(redis) ? redis.nodes('master') : [redis];
  for (const node of nodes) {
    for await (const batch of node.scanStream({ match, count }) as AsyncIterable<string[]>)
      if (batch.length > 0) yield batch;
  }
}

/**
 * UNLINKs `keys`. On a cluster one UNLINK per key (a multi-key UNLINK across slots is refused with CROSSSLOT), all
 * sent at once: ioredis writes them without waiting for each reply.
 */
export async function unlinkKeys(redis: Redis, keys: readonly string[]): Promise<number> {
  if (keys.length === 0) return 0;
  if (!isCluster(redis)) return redis.unlink(...keys);
  const counts = await Promise.all(keys.map((k) => redis.unlink(k)));
  return counts.reduce((a, b) => a + b, 0);
}

/**
 * The connection to the node that serves `key`: the client itself for one node; on a cluster, the pooled
 * connection to the primary owning the key's slot now (looked up with CLUSTER KEYSLOT). For per-node commands
 * about a key (CLIENT ID of the connection that blocks on it), which a cluster client would send to any node.
 */
export async function nodeFor(redis: Redis, key: string): Promise<NodeClient> {
  if (!isCluster(redis)) return redis;
  const slot = Number(await redis.cluster('KEYSLOT', key));
  const owner = redis.slots[slot]?.[0];
  const node = redis.nodes('master').find((n) => `${n.options.host}:${n.options.port}` === owner);
  if (!node) throw new Error(`no connection to the primary of slot ${slot} (${owner ?? 'unknown'}) for ${key}`);
  return node;
}
