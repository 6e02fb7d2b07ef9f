import type { RunInfo } from '../frontier/types';
import type { LeaseHolder } from '../frontier/runLease';
import type { LiveWriter } from '../frontier/storeWriters';

// Whether a task's run is alive, from what is alive rather than from what was last written (issue 32, item 2). A
// run's meta hash says "running" until its driver (the CLI's `run`, an editor window's Start Crawl) finalizes or
// stops it; a driver killed with its window (a reload, a crash, SIGKILL) says nothing, and every view went on
// saying "running" with frozen counts. The driver's lease (frontier/runLease.ts) is what proves it alive: renewed
// every few seconds, gone 15 s after its holder died, and at once when the holder is a process of this machine
// that no longer exists. Pure: every view (status bar, Queue Explorer, dashboard, `crawl-studio status`, the web
// monitor) words a run's phase with describeRunPhase(), so they say the same thing at the same time.

/** The process that drives a run, as its lease names it, and whether it is known dead on this machine. */
export interface RunDriver {
  readonly holder: LeaseHolder;
  /** Its process is gone (same machine, pid no longer exists): its lease will expire, but it drives nothing. */
  readonly gone: boolean;
}

export type RunPhase =
  | { readonly kind: 'none' }
  /**
   * A driver is alive: `crawl-studio run` or an editor window (holder.front). Or none is, but workers of the fleet
   * (`crawl-studio worker`) still take its pages (`driver` null): they go on, and the run is finalized when a driver
   * joins or resumes it.
   */
  | {
      readonly kind: 'running';
      readonly driver: LeaseHolder | null;
      readonly workers: number;
      /** With no driver: a `crawl-studio writer` alive on its items stream, which finishes it once it drains. */
      readonly writer?: LiveWriter | null;
    }
  /** Pause Queue (or the monitor's pause): nothing is taken until Resume. */
  | { readonly kind: 'paused' }
  /**
   * Nobody drives it: its driver was stopped with Ctrl-C, or died. Its pages are kept; Start Crawl (or `run`)
   * resumes it, Stop ends it. `since`: when it went idle, if its driver said so (a crash says nothing).
   */
  | { readonly kind: 'interrupted'; readonly since: number | null; readonly lastDriver: LeaseHolder | null }
  /** `next`: the task's schedule's next run (any worker of the fleet starts it), else null. */
  | { readonly kind: 'finished'; readonly at: number | null; readonly next: NextRun | null }
  | { readonly kind: 'stopped'; readonly at: number | null; readonly next: NextRun | null };

/**
 * A scheduled task's next run. `held`: its queue is paused, so the run due at `at` starts only once it is resumed
 * (BullMQ still moves the scheduler's job out of delayed at its time, onto a list no worker takes from).
 */
export interface NextRun {
  readonly at: number;
  readonly held: boolean;
}

/**
 * A run's phase from its meta (state, idleSince), its pause flag and its driver's lease. A lease that is absent
 * (expired or released) or whose holder is a dead process of this machine means no driver.
 */
export function runPhase(
  run: RunInfo | null,
  isPaused: boolean,
  driver: RunDriver | null,
  liveWorkers = 0,
  writer: LiveWriter | null = null,
  nextRunAt: number | null = null,
): RunPhase {
  if (!run) return { kind: 'none' };
  const next = nextRunAt === null ? null : { at: nextRunAt, held: isPaused };
  if (run.state === 'finished') return { kind: 'finished', at: run.finishedAt, next };
  if (run.state === 'stopped') return { kind: 'stopped', at: run.finishedAt, next };
  if (isPaused) return { kind: 'paused' };
  if (driver && !driver.gone) return { kind: 'running', driver: driver.holder, workers: liveWorkers };
  // A finished run that a retry or an enqueue reopened waits for workers; nothing of it was cut short.
  if (liveWorkers > 0 || run.reopened) return { kind: 'running', driver: null, workers: liveWorkers, writer };
  return { kind: 'interrupted', since: run.idleSince ?? null, lastDriver: driver?.holder ?? null };
}

/** Whether the phase needs the live workers counted: only a run nobody drives (the session's polls skip it). */
export function needsWorkerCount(run: RunInfo | null, isPaused: boolean, driver: RunDriver | null): boolean {
  return run !== null && (run.state === 'running' || run.state === 'starting') && !isPaused && (!driver || driver.gone);
}

/** Who drives a run, in words: "VS Code (pid 41, devbox)", "crawl-studio run (pid 7, ci-3)". */
function describeDriver(h: LeaseHolder): string {
  return `${h.front} (pid ${h.pid}, ${h.host})`;
}

/** The phase in one word, the same in every view: running, paused, interrupted, finished, stopped. */
export function phaseWord(p: RunPhase): string {
  return p.kind === 'none' ? 'no run' : p.kind;
}

/**
 * The phase in a sentence, for tooltips, the dashboard's banner, `status` and the monitor. An interrupted run says
 * what resumes it, since nothing else will.
 */
export function describeRunPhase(p: RunPhase): string {
  switch (p.kind) {
    case 'none':
      return 'No run yet.';
    case 'running':
      if (p.driver) return `Running, driven by ${describeDriver(p.driver)}.`;
      if (p.writer && p.workers > 0)
        return `Running on ${p.workers} worker${p.workers === 1 ? '' : 's'}, finished and stored by \`crawl-studio writer\` (pid ${p.writer.pid}, ${p.writer.host}) once they drain it.`;
      return p.workers === 0
        ? 'Reopened (a retry or a URL added after its end), and no worker takes its pages: Start Crawl (or `crawl-studio run`) resumes it.'
        : `Running on ${p.workers} worker${p.workers === 1 ? '' : 's'}, but no \`crawl-studio run\` or editor drives it: it is finished and stored once one does (Start Crawl, \`crawl-studio run\`).`;
    case 'paused':
      return 'Paused: no worker takes its pages until it is resumed.';
    case 'interrupted': {
      const who = p.lastDriver ? `its driver, ${describeDriver(p.lastDriver)}, is gone` : 'no process drives it';
      return `Interrupted: ${who}. Its pages are kept: Start Crawl (or \`crawl-studio run\`) resumes it, Stop ends it.`;
    }
    case 'finished':
      return p.next === null ? 'Finished.' : `Finished. ${nextRunText(p.next)}`;
    case 'stopped':
      if (p.next === null) return 'Stopped: the next start begins a new run.';
      // Stop pauses the task's queues, the scheduler's job with them, and a stopped run is never resumed.
      return p.next.held
        ? 'Stopped. Its schedule is held until the task is started again (Start Crawl, `crawl-studio run`), which begins a new run.'
        : `Stopped. ${nextRunText(p.next)}`;
  }
}

/** A scheduled task's next run, in UTC to the second (the same words on every machine and in every view). */
function nextRunText(next: NextRun): string {
  const at = new Date(next.at).toISOString().replace(/\.\d{3}Z$/, 'Z');
  return next.held
    ? `Its schedule's next run, due at ${at}, waits until the queue is resumed.`
    : `Its schedule starts the next run at ${at}.`;
}
