import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer, type RequestListener, type Server as HttpServerHandle } from 'node:http';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { connectRedis, type Redis as EngineRedis } from '../../src/redis/connect';

// Real services for tests. In CI (CI=true) a missing service fails the run: `requireService` throws instead
// of letting a suite skip.

export function inCI(): boolean {
  return process.env.CI === 'true' || process.env.CI === '1';
}

/** An HTTP server for a test, on a free port of a loopback address. */
export interface HttpServer {
  readonly server: HttpServerHandle;
  /** `http://<host>:<port>`, no trailing slash. */
  readonly url: string;
  /** Closes the server and every connection still open to it (keep-alive sockets would hold close() open). */
  close(): Promise<void>;
}

export async function serveHttp(handler: RequestListener, host = '127.0.0.1'): Promise<HttpServer> {
  const server = createHttpServer(handler);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, host, () => resolve());
  });
  const { address, port } = server.address() as AddressInfo;
  return {
    server,
    url: `http://${address}:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

export async function waitForPort(port: number, timeoutMs = 10_000): Promise<void> {
  const { connect } = await import('node:net');
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = connect(port, '127.0.0.1');
      s.once('connect', () => {
        s.destroy();
        resolve(true);
      });
      s.once('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`nothing listens on 127.0.0.1:${port} after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export interface RedisServer {
  readonly url: string;
  readonly port: number;
  readonly dir: string;
  readonly process: ChildProcess;
  stop(): Promise<void>;
}

export interface RedisServerOptions {
  /** Append-only persistence in `dir`, so a restart keeps the data. */
  readonly appendOnly?: boolean;
  readonly port?: number;
  readonly dir?: string;
}

/**
 * Waits until the redis-server `child` answers on `port` as itself (INFO's process_id is its pid). A port that
 * answers is not enough: between freePort() and the bind, another test's server (the suite runs stages side by side)
 * may take the port, and the caller would then use that one while its own exited with "Address already in use".
 * 'port-taken' then; an error for any other exit or after 15 s, with the server's output.
 */
export async function ownRedisOn(
  child: ChildProcess,
  port: number,
  output: () => string,
  password?: string,
): Promise<'ready' | 'port-taken'> {
  const spawnError = new Promise<Error>((resolve) => child.once('error', (err) => resolve(err)));
  const deadline = Date.now() + 15_000;
  for (;;) {
    const failure = await Promise.race([spawnError, new Promise<null>((r) => setTimeout(() => r(null), 50))]);
    if (failure)
      throw new Error(`cannot start ${REDIS_BIN()}: ${failure.message} (install it: apt-get install redis-server)`);
    if (child.exitCode !== null || child.signalCode !== null) {
      if (/address already in use/i.test(output())) return 'port-taken';
      throw new Error(
        `${child.spawnargs.join(' ')} exited (${child.exitCode ?? child.signalCode}):\n${output().trim()}`,
      );
    }
    if ((await serverPid(port, password)) === child.pid) return 'ready';
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(
        `${child.spawnargs.join(' ')} did not answer on 127.0.0.1:${port} within 15 s:\n${output().trim()}`,
      );
    }
  }
}

/** A redis-server's stdout and stderr, drained as it runs, its last 4,000 characters kept for an error. */
export function keepOutput(child: ChildProcess): () => string {
  let output = '';
  const keep = (b: Buffer) => (output = (output + b.toString()).slice(-4000));
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  return () => output;
}

/**
 * A private redis-server and one connection to it for the describe block that calls this: started before its tests,
 * stopped after them. Read `server` and `conn` inside hooks and tests (they are set by then).
 */
export function redisForSuite(): { server: RedisServer; conn: EngineRedis } {
  const suite = {} as { server: RedisServer; conn: EngineRedis };
  before(async () => {
    suite.server = await startRedis();
    suite.conn = connectRedis(suite.server.url);
  });
  after(async () => {
    suite.conn?.disconnect();
    await suite.server?.stop();
  });
  return suite;
}

/** Starts a private redis-server on a free loopback port (or on `opts.port`, which must then be free). */
export async function startRedis(opts: RedisServerOptions = {}): Promise<RedisServer> {
  const dir = opts.dir ?? mkdtempSync(join(tmpdir(), 'cs-redis-'));
  for (let attempt = 1; ; attempt++) {
    const port = opts.port ?? (await freePort());
    const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--dir', dir, '--daemonize', 'no'];
    args.push('--appendonly', opts.appendOnly ? 'yes' : 'no');
    const child = spawn(REDIS_BIN(), args, { stdio: ['ignore', 'pipe', 'pipe'] });
    const output = keepOutput(child);
    if ((await ownRedisOn(child, port, output)) === 'port-taken') {
      if (opts.port === undefined && attempt < 5) continue;
      throw new Error(
        `${REDIS_BIN()} cannot listen on 127.0.0.1:${port}: another process holds it\n${output().trim()}`,
      );
    }
    let stopped = false;
    return {
      url: `redis://127.0.0.1:${port}`,
      port,
      dir,
      process: child,
      async stop() {
        if (stopped) return;
        stopped = true;
        if (child.exitCode === null) {
          const exited = new Promise((r) => child.once('exit', r));
          child.kill('SIGTERM');
          await Promise.race([exited, new Promise((r) => setTimeout(r, 3000))]);
          if (child.exitCode === null) child.kill('SIGKILL');
        }
        if (!opts.dir) rmSync(dir, { recursive: true, force: true });
      },
    };
  }
}

/**
 * Calls of `commands` (summed) that the Redis behind `redis` has run since it started, from INFO commandstats. Names
 * as INFO spells them: `get`, `evalsha`, `client|unblock`.
 */
export async function commandCalls(
  redis: { info(section: string): Promise<string> },
  ...commands: string[]
): Promise<number> {
  const info = await redis.info('commandstats');
  let n = 0;
  for (const c of commands)
    n += Number(new RegExp(`^cmdstat_${c.replace(/[|]/g, '\\|')}:calls=(\\d+)`, 'm').exec(info)?.[1] ?? 0);
  return n;
}

// ---------------------------------------------------------------------------------------------------------------
// Redis Cluster and Redis Sentinel, real and local (issue 19). Every process is started here on loopback ports
// and stopped by its PID; a redis-server that cannot start (no binary, a port taken meanwhile by another test)
// is an error naming the command and its output, never a skip.

/** One redis-server process started by a harness: a data node, a cluster node or a sentinel. */
export interface RedisNode {
  readonly port: number;
  /** `redis://127.0.0.1:<port>`, without a password even when the node has one. */
  readonly url: string;
  readonly pid: number;
  readonly dir: string;
  readonly process: ChildProcess;
  /** Whether the process is still running (not stopped, killed or crashed). */
  alive(): boolean;
  /** SIGKILL: a crash, no shutdown save, no goodbye to its replicas or clients. */
  kill(): Promise<void>;
  /** SIGTERM, then SIGKILL after 3 s. */
  stop(): Promise<void>;
}

const REDIS_BIN = (): string => process.env.REDIS_SERVER ?? 'redis-server';
const REDIS_CLI = (): string => process.env.REDIS_CLI ?? 'redis-cli';

/**
 * Starts one redis-server on a fresh loopback port: `args(port)` gives its arguments (a config file path first
 * for a sentinel). Ready when the process answers INFO with its own PID, so a port another test took between
 * freePort() and the bind is noticed (the process exits with "Address already in use") and another port tried.
 */
async function startNode(
  dir: string,
  args: (port: number) => Promise<string[]> | string[],
  password?: string,
): Promise<RedisNode> {
  let lastOutput = '';
  for (let attempt = 0; attempt < 5; attempt++) {
    const port = await freePort();
    const argv = await args(port);
    const child = spawn(REDIS_BIN(), argv, { stdio: ['ignore', 'pipe', 'pipe'] });
    const output = keepOutput(child);
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    if ((await ownRedisOn(child, port, output, password)) === 'port-taken') {
      lastOutput = output();
      continue;
    }
    const alive = () => child.exitCode === null && child.signalCode === null;
    const end = async (signal: NodeJS.Signals) => {
      if (!alive()) return;
      child.kill(signal);
      await Promise.race([exited, new Promise((r) => setTimeout(r, 3_000))]);
      if (alive()) {
        child.kill('SIGKILL');
        await exited;
      }
    };
    return {
      port,
      url: `redis://127.0.0.1:${port}`,
      pid: child.pid!,
      dir,
      process: child,
      alive,
      kill: () => end('SIGKILL'),
      stop: () => end('SIGTERM'),
    };
  }
  throw new Error(`${REDIS_BIN()}: no free loopback port after 5 attempts:\n${lastOutput.trim()}`);
}

/** The process_id a Redis on `port` reports, or null when nothing (or not Redis) answers there. */
async function serverPid(port: number, password?: string): Promise<number | null> {
  const conn = new Redis({
    host: '127.0.0.1',
    port,
    password,
    lazyConnect: true,
    retryStrategy: () => null,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
    connectTimeout: 1_000,
  });
  conn.on('error', () => undefined);
  try {
    await conn.connect();
    const info = await conn.info('server');
    return Number(/^process_id:(\d+)/m.exec(info)?.[1] ?? NaN) || null;
  } catch {
    return null;
  } finally {
    conn.disconnect();
  }
}

/** A short-lived connection to one node, for the harness's own checks. */
async function withNode<T>(port: number, password: string | undefined, fn: (conn: Redis) => Promise<T>): Promise<T> {
  const conn = new Redis({
    host: '127.0.0.1',
    port,
    password,
    retryStrategy: () => null,
    maxRetriesPerRequest: 0,
    connectTimeout: 2_000,
  });
  conn.on('error', () => undefined);
  try {
    return await fn(conn);
  } finally {
    conn.disconnect();
  }
}

/** Polls `check` every 100 ms until it returns a value (not undefined); fails after `ms` saying what it waited for. */
async function pollFor<T>(what: string, ms: number, check: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + ms;
  let last: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v !== undefined) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline)
      throw new Error(
        `timed out after ${ms} ms waiting for ${what}${last ? ` (last error: ${(last as Error).message})` : ''}`,
      );
    await new Promise((r) => setTimeout(r, 100));
  }
}

function runCli(args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(REDIS_CLI(), args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (b: Buffer) => (out += b.toString()));
    child.stderr.on('data', (b: Buffer) => (out += b.toString()));
    child.once('error', (err) =>
      reject(new Error(`cannot run ${REDIS_CLI()}: ${err.message} (install it: apt-get install redis-tools)`)),
    );
    child.once('exit', (code) =>
      code === 0 ? resolve(out) : reject(new Error(`${REDIS_CLI()} ${args.join(' ')} exited ${code}:\n${out.trim()}`)),
    );
  });
}

async function stopAll(nodes: readonly RedisNode[], dirs: readonly string[]): Promise<void> {
  await Promise.all(nodes.map((n) => n.stop()));
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
}

export interface RedisCluster {
  /** `redis+cluster://127.0.0.1:P1,127.0.0.1:P2,...`: every primary as a seed. */
  readonly url: string;
  /** The primaries, in the order `redis-cli --cluster create` was given them (slot ranges ascending). */
  readonly nodes: readonly RedisNode[];
  stop(): Promise<void>;
}

export interface RedisClusterOptions {
  /** Primaries (no replicas); 3 by default, the fewest `redis-cli --cluster create` accepts. */
  readonly primaries?: number;
  /** Extra redis-server arguments for every node (e.g. ['--maxmemory', '100mb']). */
  readonly args?: readonly string[];
}

/**
 * A real Redis Cluster on loopback: `primaries` nodes with `--cluster-enabled yes`, joined by
 * `redis-cli --cluster create`, ready when every node reports cluster_state:ok and all 16384 slots assigned (right
 * after `create` a node may still answer CLUSTERDOWN). Each node has its own directory for nodes.conf; the bus port
 * is a free port of its own (`--cluster-port`), not port + 10000, which may be taken or past 65535.
 */
export async function startRedisCluster(opts: RedisClusterOptions = {}): Promise<RedisCluster> {
  const count = opts.primaries ?? 3;
  if (count < 3) throw new Error('redis-cli --cluster create needs at least 3 primaries');
  const root = mkdtempSync(join(tmpdir(), 'cs-cluster-'));
  const nodes: RedisNode[] = [];
  try {
    for (let i = 0; i < count; i++) {
      const dir = join(root, `node-${i}`);
      mkdirSync(dir);
      nodes.push(
        await startNode(dir, async (port) => [
          '--port',
          String(port),
          '--bind',
          '127.0.0.1',
          '--cluster-enabled',
          'yes',
          '--cluster-port',
          String(await freePort()),
          '--cluster-config-file',
          'nodes.conf',
          '--cluster-node-timeout',
          '5000',
          '--dir',
          dir,
          '--save',
          '',
          '--appendonly',
          'no',
          '--daemonize',
          'no',
          ...(opts.args ?? []),
        ]),
      );
    }
    await runCli(['--cluster', 'create', ...nodes.map((n) => `127.0.0.1:${n.port}`), '--cluster-yes']);
    for (const n of nodes) {
      await pollFor(`cluster_state:ok and 16384 slots on 127.0.0.1:${n.port}`, 30_000, () =>
        withNode(n.port, undefined, async (conn) => {
          const info = await conn.cluster('INFO');
          return /cluster_state:ok/.test(info) &&
            /cluster_slots_ok:16384/.test(info) &&
            /cluster_known_nodes:(\d+)/.exec(info)?.[1] === String(count)
            ? true
            : undefined;
        }),
      );
    }
  } catch (err) {
    await stopAll(nodes, [root]);
    throw err;
  }
  return {
    url: `redis+cluster://${nodes.map((n) => `127.0.0.1:${n.port}`).join(',')}`,
    nodes,
    stop: () => stopAll(nodes, [root]),
  };
}

export interface RedisSentinelOptions {
  /** Replicas of the master; 1 by default. */
  readonly replicas?: number;
  /** Sentinels; 3 by default, so killing the master needs a majority (quorum 2) as in production. */
  readonly sentinels?: number;
  /** The master's name the sentinels monitor; `csmaster` by default. */
  readonly masterName?: string;
  /** `requirepass` (and `masterauth`) of the data nodes, and the sentinels' `auth-pass`. */
  readonly password?: string;
  /** `requirepass` of the sentinels themselves. */
  readonly sentinelPassword?: string;
  /** How long a silent master takes to be subjectively down; 1000 ms by default (production: 5000-30000). */
  readonly downAfterMs?: number;
  /** Extra redis-server arguments for the data nodes (e.g. ['--min-replicas-to-write', '1']). */
  readonly args?: readonly string[];
}

export interface RedisSentinel {
  /** `redis+sentinel://[:password@]127.0.0.1:S1,...,127.0.0.1:Sn/<master>[?sentinelPassword=...]`. */
  readonly url: string;
  readonly masterName: string;
  readonly sentinels: readonly RedisNode[];
  /** Every data node, the first master first; which one is master now: master(). */
  readonly dataNodes: readonly RedisNode[];
  /** The data node every running sentinel names as master now (they must agree). */
  master(): Promise<RedisNode>;
  /**
   * `SENTINEL FAILOVER <master>` (a failover the operator asks for, the master still up), resolved when every
   * running sentinel names another node, that node says it is master, and the old master has become its replica.
   * With `pauseWrites`, a graceful switchover: `CLIENT PAUSE WRITE` on the master first, the failover once every
   * replica has all its writes, the pause lifted once the sentinels name the new master (see README "Running a
   * fleet": without it, writes the old master acknowledges while its replica is being promoted are lost).
   */
  failover(opts?: { readonly pauseWrites?: boolean }): Promise<RedisNode>;
  /** Kills the master (SIGKILL) and waits for the sentinels to agree on, and promote, a new one. */
  killMaster(): Promise<RedisNode>;
  stop(): Promise<void>;
}

/**
 * A real master + replicas + sentinels on loopback. Ready when every sentinel knows the master, each replica (in
 * sync) and every other sentinel, so a failover can start at once. Replication is set for tests: diskless with
 * no delay, so a replica syncs in milliseconds.
 */
export async function startRedisSentinel(opts: RedisSentinelOptions = {}): Promise<RedisSentinel> {
  const name = opts.masterName ?? 'csmaster';
  const replicas = opts.replicas ?? 1;
  const sentinelCount = opts.sentinels ?? 3;
  const quorum = Math.floor(sentinelCount / 2) + 1;
  const root = mkdtempSync(join(tmpdir(), 'cs-sentinel-'));
  const dataNodes: RedisNode[] = [];
  const sentinels: RedisNode[] = [];
  const auth = opts.password ? ['--requirepass', opts.password, '--masterauth', opts.password] : [];
  const dataArgs = (dir: string, port: number) => [
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--dir',
    dir,
    '--save',
    '',
    '--appendonly',
    'no',
    '--daemonize',
    'no',
    '--repl-diskless-sync',
    'yes',
    '--repl-diskless-sync-delay',
    '0',
    // A replica announces the address sentinels and clients should use.
    '--replica-announce-ip',
    '127.0.0.1',
    ...auth,
    ...(opts.args ?? []),
  ];
  try {
    for (let i = 0; i <= replicas; i++) {
      const dir = join(root, `data-${i}`);
      mkdirSync(dir);
      const replicaOf = i === 0 ? [] : ['--replicaof', '127.0.0.1', String(dataNodes[0]!.port)];
      dataNodes.push(await startNode(dir, (port) => [...dataArgs(dir, port), ...replicaOf], opts.password));
    }
    const master = dataNodes[0]!;
    await pollFor(`${replicas} replica(s) in sync with 127.0.0.1:${master.port}`, 30_000, () =>
      withNode(master.port, opts.password, async (conn) => {
        const info = await conn.info('replication');
        const online = [...info.matchAll(/^slave\d+:.*state=online/gm)].length;
        return online === replicas ? true : undefined;
      }),
    );
    for (let i = 0; i < sentinelCount; i++) {
      const dir = join(root, `sentinel-${i}`);
      mkdirSync(dir);
      sentinels.push(
        await startNode(
          dir,
          (port) => {
            // A sentinel rewrites its config file (what it learns, its id): one writable file per sentinel.
            const conf = join(dir, `sentinel-${port}.conf`);
            writeFileSync(
              conf,
              [
                `port ${port}`,
                'bind 127.0.0.1',
                `dir ${dir}`,
                'daemonize no',
                'sentinel resolve-hostnames no',
                'sentinel announce-ip 127.0.0.1',
                `sentinel monitor ${name} 127.0.0.1 ${master.port} ${quorum}`,
                `sentinel down-after-milliseconds ${name} ${opts.downAfterMs ?? 1000}`,
                // Also the least time between two failovers of this master (twice this): short, so a test may fail
                // over again soon; long enough for a loaded machine to finish one.
                `sentinel failover-timeout ${name} 10000`,
                `sentinel parallel-syncs ${name} 1`,
                ...(opts.password ? [`sentinel auth-pass ${name} ${opts.password}`] : []),
                ...(opts.sentinelPassword
                  ? [`requirepass ${opts.sentinelPassword}`, `sentinel sentinel-pass ${opts.sentinelPassword}`]
                  : []),
                '',
              ].join('\n'),
            );
            return [conf, '--sentinel'];
          },
          opts.sentinelPassword,
        ),
      );
    }
    for (const s of sentinels) {
      await pollFor(
        `sentinel 127.0.0.1:${s.port} to know the master, ${replicas} replica(s) and ${sentinelCount - 1} other sentinel(s)`,
        30_000,
        () =>
          withNode(s.port, opts.sentinelPassword, async (conn) => {
            const m = pairs((await conn.call('SENTINEL', 'MASTER', name)) as string[]);
            return m['flags'] === 'master' &&
              m['num-slaves'] === String(replicas) &&
              m['num-other-sentinels'] === String(sentinelCount - 1)
              ? true
              : undefined;
          }),
      );
    }
  } catch (err) {
    await stopAll([...sentinels, ...dataNodes], [root]);
    throw err;
  }

  const byPort = (port: number): RedisNode => {
    const n = dataNodes.find((d) => d.port === port);
    if (!n) throw new Error(`the sentinels name 127.0.0.1:${port}, which is none of this harness's data nodes`);
    return n;
  };
  const named = async (): Promise<number[]> =>
    Promise.all(
      sentinels
        .filter((s) => s.alive())
        .map((s) =>
          withNode(s.port, opts.sentinelPassword, async (conn) =>
            Number(((await conn.call('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', name)) as string[])[1]),
          ),
        ),
    );
  const master = async (): Promise<RedisNode> => {
    const ports = new Set(await named());
    if (ports.size !== 1) throw new Error(`the sentinels disagree on the master of ${name}: ${[...ports].join(', ')}`);
    return byPort([...ports][0]!);
  };
  const role = (n: RedisNode) =>
    withNode(n.port, opts.password, async (conn) => (await conn.call('ROLE')) as unknown[]);
  const switched = (old: RedisNode): Promise<RedisNode> =>
    pollFor(`the sentinels of ${name} to agree on a master other than 127.0.0.1:${old.port}`, 60_000, async () => {
      const ports = new Set(await named());
      return ports.size === 1 && !ports.has(old.port) ? byPort([...ports][0]!) : undefined;
    });
  const promoted = async (old: RedisNode, next: RedisNode, oldStaysUp: boolean): Promise<RedisNode> => {
    await pollFor(`127.0.0.1:${next.port} to be master`, 30_000, async () =>
      (await role(next))[0] === 'master' ? true : undefined,
    );
    if (oldStaysUp) {
      // Sentinel turns a reachable old master into a replica some seconds after the switch (+convert-to-slave):
      // until then it is a second master, and clients still on it write where nobody reads.
      await pollFor(
        `the old master 127.0.0.1:${old.port} to become a replica of 127.0.0.1:${next.port}`,
        60_000,
        async () => {
          const r = await role(old);
          return r[0] === 'slave' && Number(r[2]) === next.port && r[3] === 'connected' ? true : undefined;
        },
      );
    }
    return next;
  };
  /** Pauses writes on `node` and waits until each replica has acknowledged all the writes it took. */
  const drainWrites = async (node: RedisNode): Promise<void> => {
    await withNode(node.port, opts.password, (conn) => conn.call('CLIENT', 'PAUSE', '60000', 'WRITE'));
    await pollFor(`the replicas of 127.0.0.1:${node.port} to have all its writes`, 30_000, () =>
      withNode(node.port, opts.password, async (conn) => {
        const info = await conn.info('replication');
        const offset = /^master_repl_offset:(\d+)/m.exec(info)?.[1];
        const acked = [...info.matchAll(/^slave\d+:.*offset=(\d+)/gm)].map((m) => m[1]);
        return acked.length === replicas && acked.every((o) => o === offset) ? true : undefined;
      }),
    );
  };
  const userinfo = opts.password ? `:${encodeURIComponent(opts.password)}@` : '';
  const query = opts.sentinelPassword ? `?sentinelPassword=${encodeURIComponent(opts.sentinelPassword)}` : '';
  return {
    url: `redis+sentinel://${userinfo}${sentinels.map((s) => `127.0.0.1:${s.port}`).join(',')}/${name}${query}`,
    masterName: name,
    sentinels,
    dataNodes,
    master,
    async failover(o = {}) {
      const old = await master();
      const s = sentinels.find((x) => x.alive())!;
      if (o.pauseWrites) await drainWrites(old);
      try {
        // A paused master stops answering the sentinels' hello messages (PUBLISH waits like a write), so they may
        // start the failover by themselves first: that one is as good.
        await withNode(s.port, opts.sentinelPassword, (conn) => conn.call('SENTINEL', 'FAILOVER', name)).catch(
          (err: Error) => {
            if (!/INPROG/.test(err.message)) throw err;
          },
        );
        const next = await switched(old);
        if (o.pauseWrites) await withNode(old.port, opts.password, (conn) => conn.call('CLIENT', 'UNPAUSE'));
        return await promoted(old, next, true);
      } finally {
        if (o.pauseWrites && old.alive())
          await withNode(old.port, opts.password, (conn) => conn.call('CLIENT', 'UNPAUSE')).catch(() => undefined);
      }
    },
    async killMaster() {
      const old = await master();
      await old.kill();
      return promoted(old, await switched(old), false);
    },
    stop: () => stopAll([...sentinels, ...dataNodes], [root]),
  };
}

/** A flat [k1, v1, k2, v2...] reply (SENTINEL MASTER, CLUSTER INFO-like) as a record. */
function pairs(flat: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 0; i + 1 < flat.length; i += 2) out[flat[i]!] = flat[i + 1]!;
  return out;
}
