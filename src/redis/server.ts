import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, connect } from 'node:net';
import { delimiter, join } from 'node:path';

// A private redis-server for one project folder: loopback only, on a free port, with its data (append-only
// file) under the folder, so a crawl survives a restart of the machine or the editor. A second user of the same
// folder (the CLI while the editor runs, say) reuses the running server instead of starting another.

export interface ManagedRedis {
  readonly url: string;
  readonly pid: number;
  /** False when an already running server was reused: then stop() leaves it running. */
  readonly owned: boolean;
  /** Settles when a server this process started exits, by stop() or not; never for a reused one. */
  readonly exited: Promise<{ readonly code: number | null; readonly signal: string | null }>;
  stop(): Promise<void>;
}

export class RedisNotFoundError extends Error {
  constructor() {
    super(
      'redis-server was not found on PATH. Install Redis (Debian/Ubuntu: sudo apt-get install redis-server; ' +
        'macOS: brew install redis; Windows: use WSL or Memurai), or point at a running server with ' +
        '--redis redis://host:port (in VS Code: the crawlStudio.redisUrl setting).',
    );
    this.name = 'RedisNotFoundError';
  }
}

export function findRedisServer(explicit?: string): string | null {
  if (explicit) return existsSync(explicit) ? explicit : null;
  const names = process.platform === 'win32' ? ['redis-server.exe'] : ['redis-server'];
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    for (const n of names) {
      const p = join(dir, n);
      if (dir && existsSync(p)) return p;
    }
  }
  for (const p of ['/usr/bin/redis-server', '/usr/local/bin/redis-server', '/opt/homebrew/bin/redis-server']) {
    if (existsSync(p)) return p;
  }
  return null;
}

interface ServerFile {
  pid: number;
  port: number;
}

export async function startManagedRedis(opts: { dataDir: string; binary?: string; persistent?: boolean }): Promise<ManagedRedis> {
  mkdirSync(opts.dataDir, { recursive: true });
  const stateFile = join(opts.dataDir, 'server.json');
  const existing = readServerFile(stateFile);
  if (existing && isAlive(existing.pid) && (await answersPing(existing.port))) {
    return { url: `redis://127.0.0.1:${existing.port}`, pid: existing.pid, owned: false, exited: new Promise(() => undefined), stop: async () => undefined };
  }
  const bin = findRedisServer(opts.binary);
  if (!bin) throw new RedisNotFoundError();
  // The port of the server that ran here before, when it is free: workers, writers and clients still dialling it
  // reconnect to the new server by themselves (issue 23, item 1: a restart on another port left them dialling
  // the dead one, and the editor's views reading an empty server).
  const port = existing && (await portIsFree(existing.port)) ? existing.port : await freePort();
  const persistent = opts.persistent ?? true;
  const args = [
    '--port', String(port),
    '--bind', '127.0.0.1',
    '--dir', opts.dataDir,
    '--save', '',
    '--appendonly', persistent ? 'yes' : 'no',
    '--appendfsync', 'everysec',
    // Dedup buckets are sets of integers; a higher intset limit keeps them compact in larger crawls.
    '--set-max-intset-entries', '2048',
    '--daemonize', 'no',
  ];
  const child = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'], detached: false });
  stopOnExit(child);
  const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  let output = '';
  child.stdout!.on('data', (b: Buffer) => (output = (output + b.toString()).slice(-4000)));
  child.stderr!.on('data', (b: Buffer) => (output = (output + b.toString()).slice(-4000)));
  const deadline = Date.now() + 10_000;
  while (!(await answersPing(port))) {
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`redis-server (${bin}) did not start on 127.0.0.1:${port}:\n${output.trim()}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  writeFileSync(stateFile, JSON.stringify({ pid: child.pid!, port } satisfies ServerFile));
  return {
    url: `redis://127.0.0.1:${port}`,
    pid: child.pid!,
    owned: true,
    exited,
    // The server file stays behind with the port: the next server for this folder takes the same one.
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      // SIGTERM makes redis fsync the append-only file before it exits.
      child.kill('SIGTERM');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 5_000))]);
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    },
  };
}

// Servers this process started. If it exits without stopping one (a second Ctrl-C calls process.exit), the server
// would be left running, and the next run would reuse it and never stop it. SIGTERM makes Redis write its
// append-only file and exit by itself.
const owned = new Set<ChildProcess>();
let exitHook = false;
function stopOnExit(child: ChildProcess): void {
  owned.add(child);
  child.once('exit', () => owned.delete(child));
  if (!exitHook) {
    exitHook = true;
    process.once('exit', () => {
      for (const c of owned) if (c.exitCode === null && c.signalCode === null) c.kill('SIGTERM');
    });
  }
}

function readServerFile(path: string): ServerFile | null {
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as ServerFile;
  } catch {
    return null;
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function answersPing(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1');
    const done = (ok: boolean) => {
      s.destroy();
      resolve(ok);
    };
    s.setTimeout(1000, () => done(false));
    s.once('error', () => done(false));
    s.once('connect', () => s.write('PING\r\n'));
    s.once('data', (d) => done(d.toString().startsWith('+PONG')));
  });
}

function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}
