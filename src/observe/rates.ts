import { finishedOf } from './metrics';
import { finishedPages, rateOver, runElapsedMs } from './figures';
import type { HealthSnapshot } from './health';

// A run's pages/s and items/s as the dashboard and the web monitor show them (one source per figure): while the run
// goes, over the last seconds (RATE_WINDOW_MS, as the status bar and the Workers view); once it is over, the average
// of the whole run (the last seconds would show the drain, or a stale rate).

export interface RunRates {
  readonly pagesPerSec: number;
  readonly itemsPerSec: number;
  readonly elapsedMs: number;
  /** 'recent': the last seconds of a running run; 'run': the whole run's average, once it is over. */
  readonly basis: 'recent' | 'run';
}

export function runRates(h: Pick<HealthSnapshot, 'run' | 'stats' | 'history' | 'at'>): RunRates {
  const over = h.run !== null && h.run.state !== 'running' && h.run.state !== 'starting';
  const elapsedMs = h.run ? runElapsedMs(h.run, h.at) : 0;
  const secs = Math.max(1, elapsedMs / 1000);
  const recent = (f: (x: (typeof h.history)[number]) => number) => rateOver(h.history.map((x) => ({ t: x.t, n: f(x) })));
  return {
    pagesPerSec: over ? finishedPages(h.stats).total / secs : recent(finishedOf),
    itemsPerSec: over ? (h.stats?.items ?? 0) / secs : recent((x) => x.items),
    elapsedMs,
    basis: over ? 'run' : 'recent',
  };
}
