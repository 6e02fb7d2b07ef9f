import { spawn, type ChildProcess, type ChildProcessByStdio } from 'node:child_process';
import type { Readable } from 'node:stream';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, connect } from 'node:net';
import { delimiter, join } from 'node:path';
import { addUser, isAlive, otherUsersAlive, removeUser, startWatchdog, withStartLock } from './serverOwners';

// A private redis-server for one project folder: loopback only, on a free port, with its data (append-only
// file) under the folder, so a crawl survives a restart of the machine or the editor. A second user of the same
// folder (the CLI while the editor runs, say) reuses the running server instead of starting another; starts are
// serialised by a lock on the folder, so two at once share one server (serverOwners.ts). The server stops when the
// last process using it ends, however it ends (a watchdog), and one left by processes that all died is stopped by
// the next start.

export interface ManagedRedis {
  readonly url: string;
  readonly pid: number;
  /** False when an already running server was reused. */
  readonly owned: boolean;
  /** What the start found and did about it: a server left running by processes that died, stopped. */
  readonly note: string | null;
  /** Settles when a server this process started exits, by stop() or not; never for a reused one. */
  readonly exited: Promise<{ readonly code: number | null; readonly signal: string | null }>;
  /** Gives the server up: stopped unless another live process uses it (it then stops when they are gone). */
  stop(): Promise<void>;
  /** stop() without waiting, for a process about to exit. */
  abandon(): void;
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

function findRedisServer(explicit?: string): string | null {
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
  /** The process that started it (absent in files of older versions). */
  owner?: number;
  /** Its watchdog (serverOwners.ts). */
  watchdog?: number;
}

export interface ManagedRedisOptions {
  readonly dataDir: string;
  readonly binary?: string;
  readonly persistent?: boolean;
  /** Register this process as a user of the server (a run): the server is kept running while it lives. */
  readonly user?: boolean;
}

export async function startManagedRedis(opts: ManagedRedisOptions): Promise<ManagedRedis> {
  mkdirSync(opts.dataDir, { recursive: true });
  return withStartLock(opts.dataDir, async () => {
    const m = await startOrReuse(opts);
    if (opts.user) addUser(opts.dataDir);
    return m;
  });
}

/** The private server's command line: localhost only, persistence as asked, compact dedup buckets. */
function serverArgs(port: number, dataDir: string, persistent: boolean): string[] {
  return [
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--dir',
    dataDir,
    '--save',
    '',
    '--appendonly',
    persistent ? 'yes' : 'no',
    '--appendfsync',
    'everysec',
    // Dedup buckets are sets of integers; a higher intset limit keeps them compact in larger crawls.
    '--set-max-intset-entries',
    '2048',
    '--daemonize',
    'no',
  ];
}

/** Waits until the new server answers; one that exits or stays silent for 10 s is killed and said with its output. */
async function answeringOrKilled(
  child: ChildProcessByStdio<null, Readable, Readable>,
  port: number,
  bin: string,
): Promise<void> {
  let output = '';
  child.stdout.on('data', (b: Buffer) => (output = (output + b.toString()).slice(-4000)));
  child.stderr.on('data', (b: Buffer) => (output = (output + b.toString()).slice(-4000)));
  const deadline = Date.now() + 10_000;
  while (!(await answersPing(port))) {
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`redis-server (${bin}) did not start on 127.0.0.1:${port}:\n${output.trim()}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function startOrReuse(opts: ManagedRedisOptions): Promise<ManagedRedis> {
  const stateFile = join(opts.dataDir, 'server.json');
  const existing = readServerFile(stateFile);
  let note: string | null = null;
  if (existing && isAlive(existing.pid) && (await answersPing(existing.port))) {
    if (existing.owner === undefined || otherUsersAlive(opts.dataDir, existing.owner)) {
      return {
        url: `redis://127.0.0.1:${existing.port}`,
        pid: existing.pid,
        owned: false,
        note,
        exited: new Promise(() => undefined),
        stop: async () => release(opts.dataDir, existing.pid),
        abandon: () => release(opts.dataDir, existing.pid),
      };
    }
    // Every process that used it died (killed with SIGKILL, and its watchdog too): left over, it would hold the
    // folder's data for nobody. SIGTERM writes its append-only file; the new server reads it.
    await stopPid(existing.pid);
    note = `stopped the private redis-server (pid ${existing.pid}) left running by a process that died (pid ${existing.owner})`;
  }
  const bin = findRedisServer(opts.binary);
  if (!bin) throw new RedisNotFoundError();
  // The port of the server that ran here before, when it is free: workers, writers and clients still dialling it
  // reconnect to the new server by themselves (issue 23, item 1: a restart on another port left them dialling
  // the dead one, and the editor's views reading an empty server).
  const port = existing && (await portIsFree(existing.port)) ? existing.port : await freePort();
  const args = serverArgs(port, opts.dataDir, opts.persistent ?? true);
  const child = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'], detached: false });
  stopOnExit(child, opts.dataDir);
  const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  await answeringOrKilled(child, port, bin);
  // Written before its watchdog starts, which goes away when the file names another server.
  writeFileSync(stateFile, JSON.stringify({ pid: child.pid!, port, owner: process.pid } satisfies ServerFile));
  const watchdog = startWatchdog(opts.dataDir, child.pid!) ?? undefined;
  writeFileSync(
    stateFile,
    JSON.stringify({ pid: child.pid!, port, owner: process.pid, watchdog } satisfies ServerFile),
  );
  const dir = opts.dataDir;
  return {
    url: `redis://127.0.0.1:${port}`,
    pid: child.pid!,
    owned: true,
    note,
    exited,
    // The server file stays behind with the port: the next server for this folder takes the same one.
    stop: () =>
      withStartLock(dir, async () => {
        removeUser(dir);
        if (child.exitCode !== null || child.signalCode !== null || otherUsersAlive(dir, process.pid)) return;
        // SIGTERM makes redis fsync the append-only file before it exits.
        child.kill('SIGTERM');
        await Promise.race([exited, new Promise((r) => setTimeout(r, 5_000))]);
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      }),
    abandon: () => {
      removeUser(dir);
      if (child.exitCode === null && child.signalCode === null && !otherUsersAlive(dir, process.pid))
        child.kill('SIGTERM');
    },
  };
}

/** A reused server given up: stopped too when this was its last live user (its owner died meanwhile). */
function release(dir: string, pid: number): void {
  removeUser(dir);
  const file = readServerFile(join(dir, 'server.json'));
  if (file?.pid === pid && file.owner !== undefined && !otherUsersAlive(dir, file.owner)) {
    try {
      process.kill(pid, 'SIGTERM');
    } catch {
      // Gone already.
    }
  }
}

/** SIGTERM, and SIGKILL if it is still there after 10 s; resolves once the process is gone. */
async function stopPid(pid: number): Promise<void> {
  try {
    process.kill(pid, 'SIGTERM');
  } catch {
    return;
  }
  const deadline = Date.now() + 10_000;
  while (isAlive(pid)) {
    if (Date.now() > deadline) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        return;
      }
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

// Servers this process started. If it exits without stopping one (a second Ctrl-C calls process.exit), the server
// would be left running, and the next run would reuse it and never stop it. SIGTERM makes Redis write its
// append-only file and exit by itself.
const owned = new Set<ChildProcess>();
const dirOf = new WeakMap<ChildProcess, string>();
let exitHook = false;
function stopOnExit(child: ChildProcess, dir: string): void {
  owned.add(child);
  dirOf.set(child, dir);
  child.once('exit', () => owned.delete(child));
  if (!exitHook) {
    exitHook = true;
    process.once('exit', () => {
      for (const c of owned)
        if (c.exitCode === null && c.signalCode === null && !otherUsersAlive(dirOf.get(c) ?? '', process.pid))
          c.kill('SIGTERM');
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
