import type { Redis } from '../redis/connect';
import { hostname } from 'node:os';
import { partitionKeys, WORKERS_KEY } from './keys';
import { HostGate } from './politeness';
import { isHolderGone } from './runLease';
import { withScripts } from './scripts';

// The fleet's worker processes, as each announces itself in Redis (its heartbeat), and what is done for one that
// died without saying goodbye.

export interface WorkerBeat {
  readonly id: string;
  readonly pid: number;
  readonly host: string;
  readonly tasks: readonly string[];
  readonly concurrency: number;
  readonly started: number;
  readonly lastSeen: number;
  readonly processed: number;
  readonly failed: number;
  /**
   * Partition tag (frontier/layout.ts: the task's name for its first or only partition, `<task>.<n>` for the others)
   * -> id of the BullMQ Worker consuming it in this process. Its jobs' locks hold `<id>:<n>`, which is how a dead
   * process's jobs are found. Written before the first job is taken; absent in beats of older versions.
   */
  readonly bull?: Readonly<Record<string, string>>;
  /** A worker that sizes itself (`--concurrency auto`, worker/autoscale.ts): its range and its decisions. */
  readonly autoscale?: AutoscaleBeat;
  /** Share of the last seconds this worker's event loop was busy, 0..1 (~1: CPU-bound on its core). */
  readonly loopBusy?: number;
  /**
   * The process that started and watches it (the CLI's `run`, an editor window: worker/parentWatch.ts); absent for
   * a worker started by hand. Such a worker stops when its parent dies, so once the parent is gone its beat no
   * longer shows a run as worked on (observe/runPhase.ts), even before its last beat ages out.
   */
  readonly parent?: { readonly pid: number; readonly host: string };
  /**
   * What the worker warns of now, each a sentence (worker/activityLog.ts: its copy of a task differs from the one its
   * run runs with). `status`, the monitor and the Workers view show them; absent when there is none.
   */
  readonly warnings?: readonly string[];
}

export interface AutoscaleBeat {
  readonly min: number;
  readonly max: number;
  /** The highest concurrency it ran at. */
  readonly peak: number;
  /** The last change, with its reason ("concurrency 16 → 32: 80 pages/s at 16, CPU 35%, …"). */
  readonly last: { readonly at: number; readonly from: number; readonly to: number; readonly reason: string } | null;
  /** Why it is where it is now (the last judged window, changed or not). */
  readonly now: string | null;
}

/** Hash: worker id -> a concurrency the user asked it to run at (resizeWorker); taken by the worker. */
const RESIZE_KEY = `${WORKERS_KEY}:resize`;

/**
 * Why worker `id` cannot be asked to run at `concurrency` (a sentence for the CLI and the editor), or null when it
 * can. Only a worker that sizes itself reads the request (a fixed one would never take it), within its own range.
 */
export function resizeRefusal(
  beat: WorkerBeat | undefined,
  id: string,
  task: string,
  concurrency: number,
): string | null {
  if (!beat) return `no live worker ${id} on this Redis (\`crawl-studio status\` lists a task's workers)`;
  if (!beat.tasks.includes(task))
    return `worker ${id} does not fetch pages of ${task} (it works on ${beat.tasks.join(', ')})`;
  if (!beat.autoscale)
    return `worker ${id} runs at a fixed concurrency of ${beat.concurrency}: only a worker started with --concurrency auto or MIN..MAX can be resized`;
  const { min, max } = beat.autoscale;
  if (!Number.isInteger(concurrency) || concurrency < min || concurrency > max)
    return `the concurrency must be a whole number within worker ${id}'s range, ${min}..${max}`;
  return null;
}

/**
 * Asks a live worker that sizes itself to run at `concurrency` requests, which it then holds (it does not undo a
 * manual resize for a while, see AUTOSCALE.manualHoldMs: Celery's autoscaler does). Resolves with why it was
 * refused (resizeRefusal), or null once asked; the worker takes it at its next judged window.
 */
export async function resizeWorker(
  redis: Redis,
  id: string,
  task: string,
  concurrency: number,
): Promise<string | null> {
  const beat = (await readLiveWorkers(redis)).find((b) => b.id === id);
  const refusal = resizeRefusal(beat, id, task, concurrency);
  if (refusal) return refusal;
  await redis.hset(RESIZE_KEY, id, String(concurrency));
  return null;
}

/** The resize asked of worker `id`, if any, removed as it is read. */
export async function takeResize(redis: Redis, id: string): Promise<number | null> {
  const [[, value]] = (await redis.multi().hget(RESIZE_KEY, id).hdel(RESIZE_KEY, id).exec()) as [
    [unknown, string | null],
    [unknown, number],
  ];
  const n = Number(value);
  return value !== null && Number.isInteger(n) && n >= 1 ? n : null;
}

/** A worker process's id in the fleet: unique while it lives, and known to the process that started it. */
export function workerIdOf(pid: number, host = hostname()): string {
  return `${host}:${pid}`;
}

/**
 * One heartbeat as stored, or null when it is not one this version can read. The fleet may mix versions and
 * anything can write to Redis: one odd entry must not hide the other workers from a view.
 */
function parseWorkerBeat(json: string): WorkerBeat | null {
  let b: unknown;
  try {
    b = JSON.parse(json);
  } catch {
    return null;
  }
  if (typeof b !== 'object' || b === null) return null;
  const r = b as Record<string, unknown>;
  const numbers = ['pid', 'concurrency', 'started', 'lastSeen', 'processed', 'failed'] as const;
  if (typeof r.id !== 'string' || typeof r.host !== 'string' || !Array.isArray(r.tasks)) return null;
  if (numbers.some((k) => typeof r[k] !== 'number')) return null;
  return b as WorkerBeat;
}

/**
 * Heartbeats come every 5 s; a worker silent for a minute is gone (killed without cleanup). One rule for every
 * view that lists workers (the Workers view, the dashboard, Enqueue's "no worker" hint): issue 23 item 4 saw
 * the dashboard list dead workers for 9 minutes while the Workers view had dropped them.
 */
export const WORKER_GONE_AFTER_MS = 60_000;

/**
 * A worker silent for three heartbeats is shown as gone (the dashboard's and the monitor's rule), though it still
 * counts until WORKER_GONE_AFTER_MS: a busy worker may beat late.
 */
export const WORKER_SILENT_AFTER_MS = 15_000;

export function isWorkerGone(beat: Pick<WorkerBeat, 'lastSeen'>, now: number): boolean {
  return now - beat.lastSeen > WORKER_GONE_AFTER_MS;
}

/** The heartbeats of workers that are not gone (see WORKER_GONE_AFTER_MS), by id. */
export async function readLiveWorkers(redis: Redis, now = Date.now()): Promise<WorkerBeat[]> {
  return (await readWorkers(redis)).filter((b) => !isWorkerGone(b, now));
}

/**
 * The live workers that take `task`'s pages: their heartbeat lists it, and the process that started and watches them
 * (if any) has not died, which stops them (worker/parentWatch.ts). The one reading behind every "no worker is
 * running" (the run's phase, Retry in the editor, the monitor and the CLI, the editor's Enqueue URL).
 */
export async function readWorkersTaking(redis: Redis, task: string, now = Date.now()): Promise<WorkerBeat[]> {
  return (await readLiveWorkers(redis, now)).filter(
    (w) => w.tasks.includes(task) && !(w.parent && isHolderGone(w.parent)),
  );
}

/** The fleet's heartbeats by worker id, skipping any this version cannot read. */
export async function readWorkers(redis: Redis): Promise<WorkerBeat[]> {
  const all = await redis.hgetall(WORKERS_KEY);
  const out: WorkerBeat[] = [];
  for (const v of Object.values(all)) {
    const beat = parseWorkerBeat(v);
    if (beat) out.push(beat);
  }
  return out.sort((a, b) => a.id.localeCompare(b.id));
}

/**
 * Gives back the jobs of a worker process that is known to be dead, and removes its heartbeat. Only its own
 * supervisor can know that: anyone else sees a worker that is slow to beat. Without this its jobs stay active
 * until their locks expire (30 s by default), and a crawl whose last pages they are waits that long to end.
 * The jobs go back through BullMQ's next stalled-jobs check (see releaseJobs.lua), which counts each as a stall.
 *
 * `diedAt` guards against a recycled pid: a beat written after the death is a new process's.
 * Resolves with the number of jobs released, per task.
 */
export async function releaseDeadWorker(redis: Redis, id: string, diedAt: number): Promise<Record<string, number>> {
  const raw = await redis.hget(WORKERS_KEY, id);
  if (raw === null) return {};
  const beat = parseWorkerBeat(raw);
  if (!beat || beat.started > diedAt) return {};
  const scripts = withScripts(redis);
  const gate = new HostGate(redis);
  const released: Record<string, number> = {};
  for (const [tag, bullId] of Object.entries(beat.bull ?? {})) {
    // Task names hold no '.': a partition's tag is "<task>.<n>".
    const task = tag.split('.')[0]!;
    const bull = partitionKeys(task, tag).bull;
    // A job's lock and its host lease are both named by the token BullMQ gave the worker for it: `<id>:<n>`.
    const owner = `${bullId}:`;
    const ids = await scripts.csReleaseJobs(bull.active, bull.stalled, bull.job, owner);
    released[task] = (released[task] ?? 0) + ids.length;
    // The requests it had in flight hold their hosts' politeness slots: free them too, or the hosts run below
    // their concurrency until the leases expire.
    const hosts = new Set<string>();
    for (const data of await Promise.all(ids.map((jobId) => redis.hget(`${bull.job}${jobId}`, 'data')))) {
      const url = data ? urlOf(data) : null;
      if (url) hosts.add(url.host);
    }
    await Promise.all([...hosts].map((host) => gate.releaseAll(host, owner)));
  }
  await redis.hdel(WORKERS_KEY, id);
  return released;
}

function urlOf(jobData: string): URL | null {
  try {
    return new URL((JSON.parse(jobData) as { url: string }).url);
  } catch {
    return null;
  }
}

/** The local worker processes' last scaling decision of a task (`run --workers auto`, run/processScaler.ts). */
export interface ProcessScaleRecord {
  readonly at: number;
  readonly from: number;
  readonly to: number;
  readonly min: number;
  readonly max: number;
  readonly reason: string;
}

function processScaleKey(task: string): string {
  return `${WORKERS_KEY}:scale:${task}`;
}

/** Kept a day: `status` shows it while the run is recent. */
export async function recordProcessScale(redis: Redis, task: string, rec: ProcessScaleRecord): Promise<void> {
  await redis.set(processScaleKey(task), JSON.stringify(rec), 'PX', 86_400_000);
}

export async function readProcessScale(redis: Redis, task: string): Promise<ProcessScaleRecord | null> {
  const raw = await redis.get(processScaleKey(task));
  if (!raw) return null;
  try {
    const r = JSON.parse(raw) as ProcessScaleRecord;
    return typeof r.reason === 'string' && typeof r.to === 'number' ? r : null;
  } catch {
    return null;
  }
}
