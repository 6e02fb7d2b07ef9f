import { execFile, spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort, waitForPort } from './services';
import { skipBecause } from './skip';

// A throwaway PostgreSQL cluster per suite: initdb + pg_ctl under a temp dir on a free loopback port. PostgreSQL
// refuses to run as root, so as root every binary runs as the `postgres` user via runuser and the dir is
// chowned to it. The socket also lives in the temp dir: /var/run/postgresql may not exist or be writable.

const run = promisify(execFile);

export interface PostgresServer {
  /** postgres://postgres@127.0.0.1:PORT/postgres (trust auth: no password). */
  readonly url: string;
  readonly port: number;
  readonly dir: string;
  /** Stops the server (fast shutdown) and keeps the data, so `start` brings the same cluster back. */
  stop(): Promise<void>;
  start(): Promise<void>;
  /** Stops the server and removes the cluster. */
  destroy(): Promise<void>;
  /** A fresh database in this cluster, for suites that must not see each other's tables. */
  createDatabase(name: string): Promise<string>;
}

export function findPostgresBin(): string | null {
  if (process.env.PG_BIN) return existsSync(join(process.env.PG_BIN, 'initdb')) ? process.env.PG_BIN : null;
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return null;
  const versions = readdirSync(root)
    .filter((v) => existsSync(join(root, v, 'bin', 'initdb')))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] ? join(root, versions[0], 'bin') : null;
}

function asServerUser(bin: string, args: string[]): [string, string[]] {
  const root = typeof process.getuid === 'function' && process.getuid() === 0;
  return root ? ['runuser', ['-u', 'postgres', '--', bin, ...args]] : [bin, args];
}

async function exec(bin: string, args: string[], what: string): Promise<string> {
  const [cmd, argv] = asServerUser(bin, args);
  try {
    const { stdout } = await run(cmd, argv, { timeout: 60_000 });
    return stdout;
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(`${what} failed: ${(e.stderr || e.message).trim()}`, { cause: err });
  }
}

// Clusters still running when the process exits (an aborted run, a failing before hook, mocha's --exit): stopped
// synchronously so no postgres outlives the tests.
const live = new Map<string, () => void>();
process.once('exit', () => {
  for (const stop of live.values()) stop();
});

export async function startPostgres(): Promise<PostgresServer> {
  const bin = findPostgresBin();
  if (!bin)
    throw new Error(
      'PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb): apt-get install -y postgresql, or set PG_BIN',
    );
  const root = typeof process.getuid === 'function' && process.getuid() === 0;
  const dir = mkdtempSync(join(tmpdir(), 'cs-pg-'));
  if (root) {
    const pw = spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' });
    const gw = spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' });
    if (pw.status !== 0) throw new Error('running as root but there is no `postgres` user to run PostgreSQL as');
    chownSync(dir, Number(pw.stdout.trim()), Number(gw.stdout.trim()));
  }
  const data = join(dir, 'data');
  const port = await freePort();
  // --no-sync and fsync=off: a throwaway test cluster need not survive a power cut, and syncing costs seconds.
  try {
    await exec(
      join(bin, 'initdb'),
      ['-D', data, '-U', 'postgres', '--auth=trust', '--no-sync', '-E', 'UTF8', '--locale=C'],
      'initdb',
    );
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  const opts = [
    `-p ${port}`,
    '-c listen_addresses=127.0.0.1',
    `-c unix_socket_directories=${dir}`,
    '-c fsync=off',
    '-c full_page_writes=off',
    '-c max_connections=50',
  ].join(' ');
  const pgCtl = join(bin, 'pg_ctl');
  let running = false;
  live.set(dir, () => {
    const [cmd, argv] = asServerUser(pgCtl, ['-D', data, '-m', 'immediate', '-w', 'stop']);
    if (running) spawnSync(cmd, argv, { stdio: 'ignore', timeout: 10_000 });
    rmSync(dir, { recursive: true, force: true });
  });
  const server: PostgresServer = {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    dir,
    async start() {
      if (running) return;
      await exec(
        pgCtl,
        ['-D', data, '-o', opts, '-l', join(dir, 'server.log'), '-w', '-t', '30', 'start'],
        'pg_ctl start',
      );
      await waitForPort(port);
      running = true;
    },
    async stop() {
      if (!running) return;
      await exec(pgCtl, ['-D', data, '-m', 'fast', '-w', 'stop'], 'pg_ctl stop');
      running = false;
    },
    async destroy() {
      try {
        await server.stop();
      } finally {
        live.delete(dir);
        rmSync(dir, { recursive: true, force: true });
      }
    },
    async createDatabase(name: string) {
      if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`bad database name ${name}`);
      await exec(
        join(bin, 'psql'),
        [
          '-h',
          '127.0.0.1',
          '-p',
          String(port),
          '-U',
          'postgres',
          '-v',
          'ON_ERROR_STOP=1',
          '-c',
          `CREATE DATABASE ${name}`,
        ],
        `CREATE DATABASE ${name}`,
      );
      return `postgres://postgres@127.0.0.1:${port}/${name}`;
    },
  };
  try {
    await server.start();
  } catch (err) {
    live.delete(dir);
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  return server;
}

/**
 * Starts PostgreSQL for the suite whose `before` hook `ctx` is, or skips the suite saying why (test/support/skip.ts):
 * in CI a missing service is a failure, never a skip.
 */
export async function postgresForSuite(ctx: Mocha.Context): Promise<PostgresServer> {
  const pg = await postgresOrReason();
  return typeof pg === 'string' ? skipBecause(ctx, pg) : pg;
}

/** Starts PostgreSQL, or says why it cannot, for a suite whose other tests run without it (they skip with the reason). */
export async function postgresOrReason(): Promise<PostgresServer | string> {
  try {
    return await startPostgres();
  } catch (err) {
    return `PostgreSQL cannot start: ${(err as Error).message}`;
  }
}
