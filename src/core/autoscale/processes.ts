// The autoscaler of the number of local worker processes (`run --workers auto|MIN..MAX`): pure, like the one of a
// worker's concurrency (concurrency.ts). A worker keeps its main thread and its analysis thread busy; when its main
// thread is CPU-bound on its core, more requests in it do not help, but another process on an idle core does. When
// the machine is saturated and the processes wait for the CPU rather than work, one fewer helps.

export interface ProcessSample {
  readonly at: number;
  /** Each local worker's event-loop utilisation over its last beat, 0..1 (frontier/fleet.ts `loopBusy`). */
  readonly loopBusy: readonly number[];
  /** Share of the machine's CPU in use, 0..1, and its cores. */
  readonly machineCpu: number;
  readonly cores: number;
  /** Pages waiting (frontier and window), and the requests the fleet can have in flight. */
  readonly waitingPages: number;
  readonly fleetConcurrency: number;
  /**
   * The task is paused (Pause, or Stop): its workers are idle by choice. On a machine kept busy by something else
   * they read as workers starved of CPU, and one was stopped for it.
   */
  readonly paused?: boolean;
}

export interface ProcessState {
  readonly workers: number;
  /** No change before this: a new process needs to boot and show its effect. */
  readonly settleUntil: number;
}

export interface ProcessDecision {
  readonly state: ProcessState;
  readonly workers: number;
  readonly reason: string;
}

export const PROCESS_AUTOSCALE = {
  /** Time after a change before the next: a worker's boot, and a few beats of it working. */
  settleMs: 15_000,
  /** A worker this busy on its core is CPU-bound. */
  cpuBound: 0.85,
  /** Idle cores (in cores) a new process needs. */
  idleCores: 0.75,
  /** The machine this busy is saturated ... */
  saturated: 0.95,
  /** ... and processes this little busy are waiting for the CPU, not working. */
  starved: 0.6,
} as const;

export function decideWorkers(
  limits: { readonly min: number; readonly max: number },
  state: ProcessState,
  s: ProcessSample,
): ProcessDecision {
  const n = state.workers;
  const idle = (1 - s.machineCpu) * s.cores;
  const busy = s.loopBusy.length > 0 ? s.loopBusy.reduce((a, b) => a + b, 0) / s.loopBusy.length : 0;
  const facts = `workers ${pct(busy)} busy on their cores, CPU ${pct(s.machineCpu)} (${idle.toFixed(1)} of ${s.cores} cores idle), ${s.waitingPages} page(s) waiting`;
  const stay = (why: string): ProcessDecision => ({ state, workers: n, reason: `workers stay ${n}: ${why}` });
  const change = (to: number, why: string): ProcessDecision => ({
    state: { workers: to, settleUntil: s.at + PROCESS_AUTOSCALE.settleMs },
    workers: to,
    reason: `workers ${n} → ${to}: ${why}`,
  });
  if (n < limits.min) return change(limits.min, `below the minimum ${limits.min}`);
  if (n > limits.max) return change(limits.max, `above the maximum ${limits.max}`);
  if (s.at < state.settleUntil) return stay(`settling; ${facts}`);
  if (s.paused) return stay(`paused: its workers take no page (Pause, or Stop); ${facts}`);
  // Until every process reports, the picture is partial.
  if (s.loopBusy.length < n) return stay(`waiting for every worker's heartbeat; ${facts}`);
  if (n > limits.min && s.machineCpu >= PROCESS_AUTOSCALE.saturated && busy < PROCESS_AUTOSCALE.starved) {
    return change(n - 1, `the machine is saturated and the workers wait for it; ${facts}`);
  }
  if (n >= limits.max) return stay(`at the maximum ${limits.max}; ${facts}`);
  const cpuBound = s.loopBusy.every((b) => b >= PROCESS_AUTOSCALE.cpuBound);
  if (!cpuBound) return stay(`not CPU-bound; ${facts}`);
  if (idle < PROCESS_AUTOSCALE.idleCores) return stay(`no idle core; ${facts}`);
  if (s.waitingPages <= s.fleetConcurrency) return stay(`no work for another; ${facts}`);
  return change(n + 1, `CPU-bound on their cores with idle cores left; ${facts}`);
}

function pct(x: number): string {
  return `${Math.round(x * 100)}%`;
}
