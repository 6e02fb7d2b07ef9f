import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { freePort, keepOutput, ownRedisOn, startRedis } from '../support/services';
import { track } from './support';

// The Redis a fault scenario crawls on: one redis-server, or with CS_FAULTS_REDIS=cluster a real 3-primary Redis
// Cluster on loopback (issue 19: the fault suite passes on one node and on a cluster). Scenarios that stop, freeze
// or restart Redis do it to every node of a cluster, on the same ports and folders (nodes.conf keeps the cluster).

export const FAULTS_ON_CLUSTER = process.env.CS_FAULTS_REDIS === 'cluster';

export interface FaultRedis {
  /** redis://… or redis+cluster://… */
  readonly url: string;
  /** Sends `signal` to every redis-server process. */
  kill(signal: NodeJS.Signals): void;
  /** Resolves when every process has exited. */
  exited(): Promise<void>;
  stop(): Promise<void>;
}

export interface RestartableRedis {
  start(): Promise<FaultRedis>;
  cleanup(): void;
}

/** A fresh Redis for a scenario (a single server, or a cluster with CS_FAULTS_REDIS=cluster). */
export async function faultRedis(): Promise<FaultRedis> {
  if (FAULTS_ON_CLUSTER) {
    const r = await restartableFaultRedis(false);
    const c = await r.start();
    return { ...c, stop: async () => (await c.stop(), r.cleanup()) };
  }
  const r = await startRedis();
  track(r.process);
  return single(r.url, r.process, () => r.stop());
}

function single(url: string, child: ChildProcess, stop: () => Promise<void>): FaultRedis {
  return {
    url,
    kill: (signal) => void child.kill(signal),
    exited: () =>
      child.exitCode !== null || child.signalCode !== null
        ? Promise.resolve()
        : new Promise((r) => child.once('exit', () => r())),
    stop,
  };
}

/** A Redis that can be stopped and started again with its data (append-only) or without it. */
export async function restartableFaultRedis(appendOnly: boolean): Promise<RestartableRedis> {
  const root = mkdtempSync(join(tmpdir(), 'cs-fault-redis-'));
  if (!FAULTS_ON_CLUSTER) {
    const first = await startRedis({ appendOnly, dir: root });
    const port = first.port;
    track(first.process);
    await first.stop();
    return {
      start: async () => {
        const r = await startRedis({ appendOnly, dir: root, port });
        track(r.process);
        return single(r.url, r.process, () => r.stop());
      },
      cleanup: () => rmSync(root, { recursive: true, force: true }),
    };
  }
  const nodes: { dir: string; port: number; bus: number }[] = [];
  for (let i = 0; i < 3; i++) {
    const dir = join(root, `node-${i}`);
    mkdirSync(dir);
    nodes.push({ dir, port: 0, bus: 0 });
  }
  let created = false;
  return {
    start: async () => {
      const children = await clusterNodes(nodes, appendOnly, created);
      if (!created) {
        await cli(['--cluster', 'create', ...nodes.map((n) => `127.0.0.1:${n.port}`), '--cluster-yes']);
        created = true;
      }
      // After create, and after a restart (each node reads nodes.conf), the cluster is ok once the nodes agree.
      for (const n of nodes) await clusterOk(n.port);
      const alive = (c: ChildProcess) => c.exitCode === null && c.signalCode === null;
      return {
        url: `redis+cluster://${nodes.map((n) => `127.0.0.1:${n.port}`).join(',')}`,
        kill: (signal) => {
          for (const c of children) if (alive(c)) c.kill(signal);
        },
        exited: () =>
          Promise.all(
            children.map((c) => (alive(c) ? new Promise<void>((r) => c.once('exit', () => r())) : Promise.resolve())),
          ).then(() => undefined),
        stop: async () => {
          await Promise.all(
            children.map(async (c) => {
              if (!alive(c)) return;
              const gone = new Promise((r) => c.once('exit', r));
              c.kill('SIGCONT');
              c.kill('SIGTERM');
              await Promise.race([gone, new Promise((r) => setTimeout(r, 3_000))]);
              if (alive(c)) c.kill('SIGKILL');
            }),
          );
        },
      };
    },
    cleanup: () => rmSync(root, { recursive: true, force: true }),
  };
}

/**
 * The cluster's nodes started. The first time, on ports picked now, and picked again when another process took one
 * of them before its node could bind it (the suite runs stages side by side); once the cluster is created its nodes
 * keep their ports (nodes.conf), and a port taken then is an error.
 */
async function clusterNodes(
  nodes: { dir: string; port: number; bus: number }[],
  appendOnly: boolean,
  created: boolean,
): Promise<ChildProcess[]> {
  for (let attempt = 1; ; attempt++) {
    if (!created) for (const n of nodes) Object.assign(n, { port: await freePort(), bus: await freePort() });
    const started = await Promise.all(nodes.map((n) => clusterNode(n, appendOnly)));
    const children = started.map((s) => s.child);
    if (started.every((s) => s.state === 'ready')) return children;
    for (const c of children) c.kill('SIGKILL');
    await Promise.all(
      children.map((c) => (c.exitCode === null && c.signalCode === null ? exitOf(c) : Promise.resolve())),
    );
    const taken = nodes.filter((_, i) => started[i]!.state === 'port-taken').map((n) => n.port);
    if (created || attempt >= 5)
      throw new Error(`cluster node port(s) ${taken.join(', ')} held by another process (attempt ${attempt})`);
  }
}

const exitOf = (c: ChildProcess) => new Promise<void>((r) => c.once('exit', () => r()));

async function clusterNode(
  n: { dir: string; port: number; bus: number },
  appendOnly: boolean,
): Promise<{ child: ChildProcess; state: 'ready' | 'port-taken' }> {
  const args = [
    '--port',
    String(n.port),
    '--bind',
    '127.0.0.1',
    '--cluster-enabled',
    'yes',
    '--cluster-port',
    String(n.bus),
    '--cluster-config-file',
    'nodes.conf',
  ];
  args.push(
    '--cluster-node-timeout',
    '5000',
    '--dir',
    n.dir,
    '--save',
    '',
    '--appendonly',
    appendOnly ? 'yes' : 'no',
    '--daemonize',
    'no',
  );
  const child = track(spawn(process.env.REDIS_SERVER ?? 'redis-server', args, { stdio: ['ignore', 'pipe', 'pipe'] }));
  // The node answering as itself, not a server another test started on a port freePort() had just given out.
  return { child, state: await ownRedisOn(child, n.port, keepOutput(child)) };
}

async function clusterOk(port: number): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const r = new Redis({
      host: '127.0.0.1',
      port,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
      lazyConnect: true,
    });
    r.on('error', () => undefined);
    try {
      await r.connect();
      if (/cluster_state:ok/.test(await r.cluster('INFO'))) return;
    } catch {
      // not up yet
    } finally {
      r.disconnect();
    }
    if (Date.now() > deadline) throw new Error(`the cluster node on ${port} is not ok after 30 s`);
    await new Promise((res) => setTimeout(res, 100));
  }
}

function cli(args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.env.REDIS_CLI ?? 'redis-cli', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (b: Buffer) => (out += b.toString()));
    child.stderr.on('data', (b: Buffer) => (out += b.toString()));
    child.once('error', reject);
    child.once('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`redis-cli ${args.join(' ')} exited ${code}: ${out}`)),
    );
  });
}
