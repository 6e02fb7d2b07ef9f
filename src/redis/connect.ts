import { Cluster, Redis as NodeClient, type ClusterOptions, type RedisOptions } from 'ioredis';
import { parseRedisTarget, targetDatabase, type RedisTarget } from '../core/url/redisTarget';

// One way to open Redis for every part of the engine, from one target string (core/url/redisTarget.ts): a node, a
// master found through sentinels, or a Redis Cluster. BullMQ needs maxRetriesPerRequest: null (blocking commands
// must wait through reconnects instead of failing); we use it everywhere so a Redis restart or a failover stalls
// the crawl instead of failing it.

/**
 * A connection to Redis: one node (named directly or through sentinels; ioredis's `Redis`) or a whole cluster
 * (ioredis's `Cluster`). Code that needs one node's view (SCAN, CLIENT, INFO) goes through src/redis/nodes.ts.
 */
export type Redis = NodeClient | Cluster;

/** Reconnect forever, with a capped backoff: workers on other machines must survive a Redis restart. */
const retryStrategy = (times: number): number => Math.min(100 * 2 ** Math.min(times, 6), 3_000);

/**
 * Replies that mean "this node is no longer the master you want" (after a failover the old master is demoted,
 * or, with min-replicas-to-write, refuses writes once its replica left): the command was not run, so reconnect
 * (a sentinel-mode client asks the sentinels again) and send it again. 2: reconnect and resend.
 */
function reconnectsFor(err: Error): 2 | false {
  return /^(READONLY|NOREPLICAS|MASTERDOWN|LOADING)\b/.test(err.message) ? 2 : false;
}

/**
 * Emitted by a client (with the reply) when one of its commands met a reply that reconnectOnError reconnects for:
 * ioredis emits no 'error' for it, and the connection watch (check.ts watchConnection) says why it reconnects.
 */
export const RECONNECT_CAUSE = 'crawl-studio:reconnect-cause';

/** Options of a connection: ioredis's, and whether it follows a primary that moved (see connectTarget). */
export interface ConnectOptions extends RedisOptions {
  /**
   * A node's connection that meets a refusal a demoted primary gives (READONLY, …) reconnects and sends the command
   * again: a managed Redis's primary endpoint (ElastiCache, Memorystore, Azure) is a name that a failover moves to
   * the promoted replica, while open connections stay with the old primary (ioredis's advice for ElastiCache). For
   * the processes that write as a crawl goes on (the driver, workers, writers), which then wait through a failover
   * as through a restart. Not for a command that writes once (`pause`, the monitor's buttons), which would wait for
   * ever on a node that stays a replica instead of saying so. A replica named from the start is refused by the
   * connection check (check.ts) before any of this. Through sentinels or on a cluster it is always so: they name
   * the current primary.
   */
  readonly followPrimary?: boolean;
}

export function connectRedis(target: string, extra: ConnectOptions = {}): Redis {
  return connectTarget(parseRedisTarget(target), extra);
}

export function connectTarget(target: RedisTarget, opts: ConnectOptions = {}): Redis {
  const { followPrimary = false, ...extra } = opts;
  let client: Redis;
  const reconnectOnError = (err: Error): 2 | false => {
    const again = reconnectsFor(err);
    if (again) client.emit(RECONNECT_CAUSE, err);
    return again;
  };
  const base: RedisOptions = {
    maxRetriesPerRequest: null,
    enableReadyCheck: true,
    retryStrategy,
    connectionName: 'crawl-studio',
    ...(followPrimary ? { reconnectOnError } : {}),
    ...extra,
  };
  switch (target.kind) {
    case 'node':
      client = new NodeClient(target.url, base);
      break;
    case 'sentinel':
      client = new NodeClient({
        ...base,
        sentinels: target.sentinels.map((s) => ({ host: s.host, port: s.port })),
        name: target.masterName,
        role: 'master',
        db: target.db,
        username: target.username,
        password: target.password,
        sentinelUsername: target.sentinelUsername,
        sentinelPassword: target.sentinelPassword,
        ...(target.tls ? { tls: {}, sentinelTLS: {}, enableTLSForSentinelMode: true } : {}),
        // All sentinels unreachable: keep asking, as for the node itself (a connection check asks once).
        sentinelRetryStrategy: extra.retryStrategy ?? retryStrategy,
        // Subscribes to the sentinels' +switch-master and reconnects at once: without it a client stays on the
        // old master until Sentinel demotes it, seconds later, writing where nobody will read.
        failoverDetector: true,
        reconnectOnError,
      });
      break;
    case 'cluster': {
      const options: ClusterOptions = {
        // Per node, and what BullMQ reads (options.redisOptions) to check maxRetriesPerRequest.
        redisOptions: {
          ...base,
          username: target.username,
          password: target.password,
          ...(target.tls ? { tls: {} } : {}),
          reconnectOnError,
        },
        clusterRetryStrategy: extra.retryStrategy ?? retryStrategy,
        enableReadyCheck: true,
        // Writes and reads both go to primaries: the crawl reads what it just wrote.
        scaleReads: 'master',
        enableAutoPipelining: extra.enableAutoPipelining ?? false,
        lazyConnect: extra.lazyConnect ?? false,
        ...(extra.connectTimeout ? { slotsRefreshTimeout: extra.connectTimeout } : {}),
      };
      client = new Cluster(
        target.nodes.map((n) => ({ host: n.host, port: n.port })),
        options,
      );
      break;
    }
  }
  // Without a listener ioredis prints every reconnect error; callers that care subscribe themselves.
  client.on('error', () => undefined);
  // When Redis refuses to SELECT the target's database, ioredis only emits this error and goes on in database 0,
  // sending there what was queued meanwhile (BullMQ's queue meta, a run's lease). Closing the connection at the
  // refusal fails those commands instead; the connection check (check.ts) says why, with the target.
  if (targetDatabase(target) !== 0)
    client.on('error', (err: Error) => {
      if (isSelectRefusal(err)) client.disconnect();
    });
  return client;
}

/** Redis refused to SELECT a database: an index out of range, or an ACL user denied SELECT. */
export function isSelectRefusal(err: unknown): err is Error {
  return err instanceof Error && /DB index|'select' command/i.test(err.message);
}

/**
 * Errors that say a connection dropped or a cluster is not serving yet, not that a command was wrong: the command may
 * be sent again once Redis is back. A single node's connection waits through a restart (maxRetriesPerRequest: null
 * resends what was in flight); a Cluster's rejects what was in flight on a node that went away while the cluster is
 * not ready, and its reconnects fail with these until every node serves again (seen: a crawl's driver ended by
 * "Connection is closed." across a restart of the cluster, issue 35). A MULTI or pipeline in flight is not resent
 * even on a single node: ioredis rejects it with "Command aborted due to connection close" (seen: a worker's page
 * failed with it during a Sentinel failover, when the client reconnected to the new master).
 */
export function isConnectionDrop(err: unknown): boolean {
  const m = err instanceof Error ? err.message : String(err);
  return /^(Connection is closed|Command aborted due to connection close|Failed to refresh slots cache|None of startup nodes is available|Cluster isn't ready|Too many Cluster redirections|Stream isn't writeable)|^(CLUSTERDOWN|LOADING|TRYAGAIN|MASTERDOWN)\b|\b(ECONNREFUSED|ECONNRESET|EPIPE|ETIMEDOUT)\b/.test(
    m,
  );
}

/** True for a Redis Cluster connection (ioredis's Cluster). */
export function isCluster(redis: Redis): redis is Cluster {
  // As BullMQ tells them apart: by the flag, not by class identity.
  return (redis as { isCluster?: boolean }).isCluster === true;
}

// Kept here too for the engine's callers; the extension imports it from core (no ioredis at activation).
export { redactUrl } from '../core/url/redact';
