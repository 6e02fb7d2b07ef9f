import { spawn, type ChildProcess } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { workerArgs, workerEnv, type WorkerFlags } from '../worker/args';
import { PARENT_PIPE_ENV } from '../worker/parentWatch';
import { asScaled, AUTO_CONCURRENCY_START, initial } from '../core/autoscale/range';
import { formatLogLine, LOG_FORMAT_ENV, parseLogFormat } from '../core/logLine';

// Starts and watches local worker processes. The CLI's `run` and the extension both use it, so a worker
// started from either is the same program with the same flags. Workers are child processes: a crash of one
// never takes the parent down, and its last log lines are kept to explain the exit.

export interface SupervisorOptions extends WorkerFlags {
  /** Absolute path of dist/worker.js. */
  readonly workerScript: string;
  readonly taskFiles: readonly string[];
  /** Node binary; in the extension host this is Electron, run as Node via ELECTRON_RUN_AS_NODE. */
  readonly execPath?: string;
  readonly env?: NodeJS.ProcessEnv;
  /** Start a replacement when a worker exits unexpectedly. */
  readonly restartOnCrash?: boolean;
  readonly cwd?: string;
}

export interface WorkerProcessInfo {
  readonly pid: number;
  readonly startedAt: number;
  readonly taskFiles: readonly string[];
  /** Requests in flight it started with (an autoscaled worker's current one is in its heartbeat). */
  readonly concurrency: number;
  /** It sizes itself between these (`--concurrency auto|MIN..MAX`). */
  readonly autoscale?: { readonly min: number; readonly max: number };
}

export interface SupervisorEvents {
  log: [pid: number, line: string];
  spawn: [info: WorkerProcessInfo];
  exit: [pid: number, code: number | null, signal: NodeJS.Signals | null, expected: boolean, lastLines: string[]];
  /** The jobs a dead worker held went back to the queue (see release()). */
  released: [pid: number, jobs: number];
}

const KEEP_LINES = 50;

/**
 * A worker that exits with an error code sooner than this after its start failed to start (a task file broken since
 * the run began, a revoked grant). One killed by a signal (SIGKILL, a crash on a page) is replaced at once.
 */
const QUICK_EXIT_MS = 10_000;

/** The longest wait before a replacement, after many quick exits in a row. */
const MAX_RESTART_DELAY_MS = 30_000;

/**
 * How long to wait before replacing a worker, after `quickExits` workers in a row failed to start (QUICK_EXIT_MS):
 * the first at once, then 1, 2, 4 … 30 s. Replacing each at once restarted a worker
 * whose task file no longer parsed four times a second, for as long as the run lasted.
 */
export function restartDelayMs(quickExits: number): number {
  return quickExits <= 1 ? 0 : Math.min(MAX_RESTART_DELAY_MS, 1_000 * 2 ** (quickExits - 2));
}

/** Past this, a dead worker's jobs are left to their locks' expiry (Redis is down, say). */
const RELEASE_TIMEOUT_MS = 10_000;

// Worker processes of every supervisor in this process. When it exits without stopping them (a second Ctrl-C
// calls process.exit, an uncaught error), they would otherwise run on with nobody watching: crawling, holding
// Redis, writing to a closed pipe. Killed hard, like a crash: their jobs go back to the queue.
// Not those asked to stop (stopOne): they are finishing their pages and exit by themselves. An editor window's
// extension host stops its workers and exits at once on a reload; killing them then re-fetched on Resume the
// pages that were on the wire (issue 32).
const live = new Set<ChildProcess>();
const stopping = new WeakSet<ChildProcess>();
let exitHook = false;
function trackChild(child: ChildProcess): void {
  live.add(child);
  child.once('exit', () => live.delete(child));
  if (!exitHook) {
    exitHook = true;
    process.once('exit', () => {
      for (const c of live) if (c.exitCode === null && c.signalCode === null && !stopping.has(c)) c.kill('SIGKILL');
    });
  }
}

export class WorkerSupervisor extends EventEmitter<SupervisorEvents> {
  private readonly children = new Map<
    number,
    { child: ChildProcess; info: WorkerProcessInfo; lines: string[]; stopping: boolean; booted: Promise<void> }
  >();
  private stopped = false;
  /** Workers in a row that failed to start (QUICK_EXIT_MS, restartDelayMs); any other unexpected exit resets it. */
  private quickExits = 0;
  /** Replacements waiting out their delay. */
  private readonly respawns = new Set<NodeJS.Timeout>();
  /** Releases of dead workers' jobs under way (see release()). */
  private readonly releasing = new Set<Promise<void>>();

  constructor(private readonly opts: SupervisorOptions) {
    super();
  }

  list(): WorkerProcessInfo[] {
    return [...this.children.values()].map((c) => c.info);
  }

  start(count: number): WorkerProcessInfo[] {
    this.stopped = false;
    return Array.from({ length: count }, () => this.spawnOne());
  }

  private spawnOne(): WorkerProcessInfo {
    const args = [this.opts.workerScript, ...workerArgs(this.opts.taskFiles, this.opts)];
    const child = spawn(this.opts.execPath ?? process.execPath, args, {
      // The Redis URL, which may hold a password, by environment: a command line is readable by every user.
      env: {
        ...process.env,
        ...this.opts.env,
        ...workerEnv(this.opts),
        ELECTRON_RUN_AS_NODE: '1',
        [PARENT_PIPE_ENV]: '1',
      },
      // stdin is the parent pipe (see parentWatch.ts): never written, closed by the kernel when this process dies.
      stdio: ['pipe', 'pipe', 'pipe'],
      cwd: this.opts.cwd,
    });
    if (child.pid === undefined)
      throw new Error(`could not start a worker process (${this.opts.execPath ?? process.execPath})`);
    const pid = child.pid;
    const scaled = asScaled(this.opts.concurrency);
    const info: WorkerProcessInfo = {
      pid,
      startedAt: Date.now(),
      taskFiles: this.opts.taskFiles,
      concurrency: initial(scaled, AUTO_CONCURRENCY_START),
      ...(scaled.kind === 'auto' ? { autoscale: { min: scaled.min, max: scaled.max } } : {}),
    };
    let markBooted!: () => void;
    // A worker's first line (its start-up banner, or the error that stops it) or its exit ends its boot.
    const booted = new Promise<void>((r) => (markBooted = r));
    const entry = { child, info, lines: [] as string[], stopping: false, booted };
    this.children.set(pid, entry);
    trackChild(child);
    const onData = (buf: Buffer) => {
      markBooted();
      for (const line of buf.toString('utf8').split('\n')) {
        if (!line) continue;
        entry.lines.push(line);
        if (entry.lines.length > KEEP_LINES) entry.lines.shift();
        this.emit('log', pid, line);
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('exit', (code, signal) => {
      const diedAt = Date.now();
      markBooted();
      this.children.delete(pid);
      const expected = entry.stopping || this.stopped;
      this.emit('exit', pid, code, signal, expected, entry.lines.slice());
      // A worker that closes exits 0 with nothing left locked; any other exit may leave jobs locked.
      if (signal !== null || code !== 0) {
        const releasing = this.release(pid, diedAt).finally(() => this.releasing.delete(releasing));
        this.releasing.add(releasing);
      }
      if (!expected && this.opts.restartOnCrash)
        this.replace(pid, signal === null && diedAt - info.startedAt < QUICK_EXIT_MS);
    });
    this.emit('spawn', info);
    return info;
  }

  /**
   * Resolves when every worker started so far has booted (printed its first line or exited), or after
   * `timeoutMs`, whichever is first. For set-up that would compete with the workers' boot for CPU and is not
   * needed before they run: on a 2-core machine, a store opening beside a booting worker delayed its first
   * request by 100-250 ms.
   */
  async booted(timeoutMs: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<void>((r) => (timer = setTimeout(r, timeoutMs)));
    try {
      await Promise.race([Promise.all([...this.children.values()].map((c) => c.booted)), timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Graceful: in-flight jobs finish first. After `graceMs`, a worker is killed and its jobs go back to the queue. */
  async stopOne(pid: number, graceMs = 30_000): Promise<void> {
    const entry = this.children.get(pid);
    if (!entry) return;
    const exited = new Promise<void>((r) => entry.child.once('exit', () => r()));
    // Once: to a worker, a second SIGTERM means "give up the pages in flight" (an editor's window reload stopped
    // its workers twice, through the Workers view and the crawl).
    if (!entry.stopping) entry.child.kill('SIGTERM');
    entry.stopping = true;
    stopping.add(entry.child);
    const timer = setTimeout(() => entry.child.kill('SIGKILL'), graceMs);
    await exited;
    clearTimeout(timer);
  }

  /** A replacement for a worker that died unexpectedly (`failedStart`: see QUICK_EXIT_MS): at once, or after restartDelayMs. */
  private replace(pid: number, failedStart: boolean): void {
    this.quickExits = failedStart ? this.quickExits + 1 : 0;
    const delay = restartDelayMs(this.quickExits);
    if (delay === 0) {
      this.spawnOne();
      return;
    }
    // Said as the worker's own lines are, so `run` and the editor's worker log show it beside the exit.
    const line = formatLogLine(
      parseLogFormat(process.env[LOG_FORMAT_ENV]),
      Date.now(),
      'warn',
      `${this.quickExits} workers in a row exited with an error within ${QUICK_EXIT_MS / 1000} s of their start: starting the next in ${delay / 1000} s`,
      { event: 'worker-restart-delayed' },
    );
    this.emit('log', pid, line);
    const timer = setTimeout(() => {
      this.respawns.delete(timer);
      if (!this.stopped) this.spawnOne();
    }, delay);
    this.respawns.add(timer);
  }

  private cancelRespawns(): void {
    for (const t of this.respawns) clearTimeout(t);
    this.respawns.clear();
  }

  /** Stops every worker (see stopOne), and resolves once the jobs of any that died instead have been released. */
  async stopAll(graceMs = 30_000): Promise<void> {
    this.stopped = true;
    this.cancelRespawns();
    await Promise.all([...this.children.keys()].map((pid) => this.stopOne(pid, graceMs)));
    // A caller may exit as soon as this resolves: a release cut short leaves its jobs locked for lockDuration.
    await Promise.all(this.releasing);
  }

  async restart(pid: number): Promise<WorkerProcessInfo> {
    await this.stopOne(pid);
    return this.spawnOne();
  }

  /**
   * Gives a dead worker's jobs back to the queue, and its hosts' politeness slots, now rather than when their locks
   * and leases expire: the fleet runs the jobs again after its next stalled-jobs check. Best effort: if Redis cannot
   * be reached, the locks and leases expire as they would have.
   */
  private async release(pid: number, diedAt: number): Promise<void> {
    // Loaded here, not at the top: the extension imports this module at activation, which must not load ioredis.
    const [{ connectRedis }, { releaseDeadWorker, workerIdOf }] = await Promise.all([
      import('../redis/connect'),
      import('../frontier/fleet'),
    ]);
    const redis = connectRedis(this.opts.redis, { maxRetriesPerRequest: 1, connectionName: 'crawl-studio-supervisor' });
    // Disconnecting fails the pending commands, which ends the wait.
    const timer = setTimeout(() => redis.disconnect(), RELEASE_TIMEOUT_MS);
    try {
      const released = await releaseDeadWorker(redis, workerIdOf(pid), diedAt);
      const jobs = Object.values(released).reduce((a, b) => a + b, 0);
      if (jobs > 0) this.emit('released', pid, jobs);
    } catch {
      // Left to the locks' expiry.
    } finally {
      clearTimeout(timer);
      redis.disconnect();
    }
  }

  /**
   * Quit now: every worker dies at once. Resolves when they have exited and their jobs have been released (see
   * release()), for a caller that can wait that long before it exits itself; otherwise their jobs go back to the
   * queue when their locks expire.
   */
  async killAll(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    this.stopped = true;
    this.cancelRespawns();
    const children = [...this.children.values()].map((c) => c.child);
    // Registered after the supervisor's own exit handler, so each release has begun when its exit resolves here.
    const exited = children.map((child) => new Promise((resolve) => child.once('exit', resolve)));
    for (const child of children) child.kill(signal);
    await Promise.all(exited);
    await Promise.all(this.releasing);
  }

  /** For tests and fault injection: kill a worker without letting it finish anything. */
  kill(pid: number, signal: NodeJS.Signals = 'SIGKILL'): void {
    this.children.get(pid)?.child.kill(signal);
  }
}
