import type { Redis as NodeClient } from 'ioredis';
import { isCluster, type Redis } from './connect';

// Writes a replica has, on a connection through Sentinel (README "Running a fleet": what a failover keeps). Redis
// replicates asynchronously: a master acknowledges a write before its replicas have it, and when it crashes the
// sentinels promote a replica that may lack its last writes. A page's finish (its links, its record, its job marked
// done) and BullMQ's completion of its job are two writes, on two connections: if the master dies between them with
// the first one unreplicated, the client sends the second to the new master, and the job is completed there while
// its page's links and items are gone. The worker therefore waits, before it lets BullMQ complete a job, until a
// replica has the page's writes (WAIT 1), and checks that its connection did not move to another master meanwhile
// (the writes may then be on the dead one: the page's finish is written again, which changes nothing if it was kept).
//
// Only on a Sentinel connection: a single node has no replica to wait for, and a cluster's failover is not this code's.

/** How long one WAIT may block the connection for a replica's acknowledgement. */
const WAIT_MS = 2_000;
/** After a WAIT no replica answered because none is attached, how long the next writes are not waited for. */
const NO_REPLICA_MS = 5_000;
/**
 * How many WAITs in a row a write waits through while replicas are attached but none acknowledges (each WAIT_MS):
 * past that the replicas are taken as stuck rather than slow, and the crawl goes on without them for NO_REPLICA_MS.
 */
const LAGGING_WAITS = 15;

export interface ReplicaWait {
  /** The connection's generation: it changes each time the client (re)connects, to the same master or another. */
  epoch(): number;
  /**
   * Resolves once a replica has acknowledged every write this connection made before the call: true when the
   * connection stayed on one master since `since` (the writes made since then are on a replica, or no replica is
   * there to have them), false when it reconnected meanwhile (some may have gone to a master that is gone).
   */
  confirm(since: number): Promise<boolean>;
}

class SentinelWrites implements ReplicaWait {
  private generation = 0;
  private next: Promise<number> | null = null;
  private skipUntil = 0;

  constructor(private readonly redis: NodeClient) {
    // Only a reconnect starts a generation. Commands sent before the first connection wait in ioredis's offline
    // queue and go out on it, so a write made then, with the generation read then, is on the master of the first
    // 'ready': counting that one would take every connection's first writes for a failover.
    let connected = redis.status === 'ready';
    redis.on('ready', () => {
      if (connected) this.generation++;
      connected = true;
    });
  }

  epoch(): number {
    return this.generation;
  }

  async confirm(since: number): Promise<boolean> {
    // A WAIT that times out says only that no replica has the writes yet. While replicas are attached they may be
    // slow (a loaded machine), and a write they lack is lost if the master dies now: it is waited for again. Only a
    // master without replicas (nothing to wait for), or replicas that never answer, lets writes through unwaited.
    for (let waits = 1; Date.now() >= this.skipUntil; waits++) {
      if ((await this.waitOnce()) >= 1 || this.generation !== since) break;
      if (waits >= LAGGING_WAITS || (await this.attachedReplicas()) === 0) {
        this.skipUntil = Date.now() + NO_REPLICA_MS;
        break;
      }
    }
    return this.generation === since;
  }

  /**
   * One WAIT serves every caller of the same turn of the event loop: their writes were answered before it is sent, so
   * it covers them all. It must be sent on the connection that wrote (it waits for that client's own last write), and
   * while it waits the commands behind it on this connection wait too: normally one round trip to a replica (a master
   * with a client in WAIT asks its replicas for an acknowledgement at once, REPLCONF GETACK), at worst WAIT_MS.
   */
  private waitOnce(): Promise<number> {
    this.next ??= new Promise<number>((resolve) =>
      setImmediate(() => {
        this.next = null;
        resolve(this.redis.wait(1, WAIT_MS).catch(() => 0));
      }),
    );
    return this.next;
  }

  /** The replicas the master lists as attached (ROLE); 0 when it cannot say (the connection is moving). */
  private async attachedReplicas(): Promise<number> {
    try {
      const role = (await this.redis.call('ROLE')) as unknown[];
      return role[0] === 'master' && Array.isArray(role[2]) ? role[2].length : 0;
    } catch {
      return 0;
    }
  }
}

const waits = new WeakMap<Redis, ReplicaWait | null>();

/** The replica wait of a connection through Sentinel; null for any other connection (nothing to wait for). */
export function replicaWait(redis: Redis): ReplicaWait | null {
  let w = waits.get(redis);
  if (w === undefined) {
    const sentinel = !isCluster(redis) && (redis.options.sentinels?.length ?? 0) > 0;
    w = sentinel ? new SentinelWrites(redis) : null;
    waits.set(redis, w);
  }
  return w;
}
