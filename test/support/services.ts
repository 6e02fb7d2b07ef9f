import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer as createHttpServer, type RequestListener, type Server as HttpServerHandle } from 'node:http';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

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

/** Starts a private redis-server on a free loopback port. */
export async function startRedis(opts: RedisServerOptions = {}): Promise<RedisServer> {
  const bin = process.env.REDIS_SERVER ?? 'redis-server';
  const port = opts.port ?? (await freePort());
  const dir = opts.dir ?? mkdtempSync(join(tmpdir(), 'cs-redis-'));
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--dir', dir, '--daemonize', 'no'];
  args.push('--appendonly', opts.appendOnly ? 'yes' : 'no');
  const child = spawn(bin, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  const spawnError = new Promise<never>((_, reject) =>
    child.once('error', (err) => reject(new Error(`cannot start ${bin}: ${err.message} (install it: apt-get install redis-server)`))),
  );
  await Promise.race([waitForPort(port), spawnError]);
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

/**
 * Calls of `commands` (summed) that the Redis behind `redis` has run since it started, from INFO commandstats. Names
 * as INFO spells them: `get`, `evalsha`, `client|unblock`.
 */
export async function commandCalls(redis: { info(section: string): Promise<string> }, ...commands: string[]): Promise<number> {
  const info = await redis.info('commandstats');
  let n = 0;
  for (const c of commands) n += Number(new RegExp(`^cmdstat_${c.replace(/[|]/g, '\\|')}:calls=(\\d+)`, 'm').exec(info)?.[1] ?? 0);
  return n;
}
