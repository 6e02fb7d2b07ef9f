import { spawn } from 'node:child_process';
import {
  closeSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  statSync,
  unlinkSync,
  writeSync,
  existsSync,
} from 'node:fs';
import { join } from 'node:path';

// Who may start, use and stop a project folder's private redis-server (server.ts). Two processes starting at once
// (two `crawl-studio run` in one folder, issue 35 item 3) each started a server of their own on one append-only
// folder: the start is now serialised by a lock file, so the second reuses the first's server, and the task's run
// lease (frontier/runLease.ts) refuses it as on any shared Redis. A server whose users all died (a `run` killed
// with SIGKILL, issue 30 item 6) is stopped by its watchdog, and a later start stops one left over anyway.

/** Whether a process exists (one of another user counts: EPERM). */
export function isAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
  return !isZombie(pid);
}

/** A process that exited and whose parent has not reaped it yet (Linux; elsewhere never said). */
function isZombie(pid: number): boolean {
  try {
    return / Z /.test(readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\)/s, ')'));
  } catch {
    return false;
  }
}

/** How long a start waits for another process's start of the same folder's server. */
const LOCK_WAIT_MS = 30_000;

/**
 * Runs `fn` holding the folder's start lock (`start.lock`, the holder's pid inside). A lock whose holder died is
 * taken over; one held by a live process is waited for.
 */
export async function withStartLock<T>(dir: string, fn: () => Promise<T>): Promise<T> {
  const path = join(dir, 'start.lock');
  const deadline = Date.now() + LOCK_WAIT_MS;
  for (;;) {
    try {
      const fd = openSync(path, 'wx');
      writeSync(fd, String(process.pid));
      closeSync(fd);
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    if (lockIsStale(path)) {
      try {
        unlinkSync(path);
      } catch {
        // Another process took it over first.
      }
      continue;
    }
    if (Date.now() > deadline)
      throw new Error(
        `the private redis-server of ${dir} is being started by pid ${readPid(path)} for over ${LOCK_WAIT_MS / 1000} s (${path})`,
      );
    await new Promise((r) => setTimeout(r, 50));
  }
  try {
    return await fn();
  } finally {
    try {
      unlinkSync(path);
    } catch {
      // Taken over as stale meanwhile: nothing to give back.
    }
  }
}

function readPid(path: string): number {
  try {
    return Number(readFileSync(path, 'utf8').trim());
  } catch {
    return NaN;
  }
}

function lockIsStale(path: string): boolean {
  const pid = readPid(path);
  if (Number.isInteger(pid) && pid > 0) return !isAlive(pid);
  // Created and not written yet, or unreadable: stale only once old (its writer died between the two).
  try {
    return Date.now() - statSync(path).mtimeMs > 5_000;
  } catch {
    return false;
  }
}

/**
 * The private server's data folder, for the worker processes a `run` or an editor window starts on it: each
 * registers as a user (registerWorkerUser), so the server outlives their parent until they have finished their
 * pages. A window reload stopped the server under workers still finishing theirs, and those pages were fetched
 * again on Resume.
 */
export const PRIVATE_REDIS_DIR_ENV = 'CRAWL_STUDIO_PRIVATE_REDIS_DIR';

/** A worker on the private server of `dir` (PRIVATE_REDIS_DIR_ENV): a user until it exits. */
export function registerWorkerUser(dir: string): void {
  // A folder removed since (a test's temporary one) is not made again.
  if (!existsSync(dir)) return;
  addUser(dir);
  process.once('exit', () => removeUser(dir));
}

/** This process uses the folder's server (a `run`): it is kept running while any user lives. */
export function addUser(dir: string): void {
  mkdirSync(join(dir, 'users'), { recursive: true });
  closeSync(openSync(join(dir, 'users', String(process.pid)), 'w'));
  for (const pid of userPids(dir)) if (!isAlive(pid)) removeUser(dir, pid);
}

export function removeUser(dir: string, pid = process.pid): void {
  try {
    unlinkSync(join(dir, 'users', String(pid)));
  } catch {
    // Not registered, or removed already.
  }
}

function userPids(dir: string): number[] {
  try {
    return readdirSync(join(dir, 'users'))
      .map(Number)
      .filter((n) => Number.isInteger(n) && n > 0);
  } catch {
    return [];
  }
}

/** Whether a process other than `except` that uses the folder's server (its owner, a registered user) lives. */
export function otherUsersAlive(dir: string, owner: number, except = process.pid): boolean {
  return [owner, ...userPids(dir)].some((pid) => pid !== except && isAlive(pid));
}

/**
 * The watchdog of a server: a small Node process of its own (no native module, the same on every OS) that stops
 * the server with SIGTERM (which writes its append-only file) once neither its owner nor any registered user lives,
 * and ends when the server does or when another server took the folder over. It survives its starter by design.
 */
const WATCHDOG = `
const fs = require('fs'), path = require('path');
const dir = process.argv[1], pid = Number(process.argv[2]);
const zombie = (p) => { try { return / Z /.test(fs.readFileSync('/proc/' + p + '/stat', 'utf8').replace(/^.*\\)/s, ')')); } catch { return false; } };
const alive = (p) => { if (!Number.isInteger(p) || p <= 0) return false; try { process.kill(p, 0); } catch (e) { return e.code === 'EPERM'; } return !zombie(p); };
const server = () => { try { return JSON.parse(fs.readFileSync(path.join(dir, 'server.json'), 'utf8')); } catch { return null; } };
const users = () => { try { return fs.readdirSync(path.join(dir, 'users')).map(Number); } catch { return []; } };
let stoppingSince = 0;
setInterval(() => {
  if (!alive(pid)) process.exit(0);
  if (stoppingSince) { if (Date.now() - stoppingSince > 10000) { try { process.kill(pid, 'SIGKILL'); } catch {} } return; }
  const s = server();
  if (s && s.pid !== pid) process.exit(0);
  if (![s ? s.owner : 0, ...users()].some(alive)) { stoppingSince = Date.now(); try { process.kill(pid, 'SIGTERM'); } catch {} }
}, 500);
`;

/** Starts the watchdog of the server `pid` of folder `dir`; its pid. */
export function startWatchdog(dir: string, pid: number): number | null {
  const child = spawn(process.execPath, ['-e', WATCHDOG, dir, String(pid)], {
    detached: true,
    stdio: 'ignore',
    // The extension host's Node is Electron's: run as Node, as its workers are.
    env: { ...process.env, ELECTRON_RUN_AS_NODE: '1' },
  });
  child.on('error', () => undefined);
  child.unref();
  return child.pid ?? null;
}
