import { finishedOf } from './metrics';
import { finishedPages, rateOver, recentWindowMs, runElapsedMs } from './figures';
import type { HealthSnapshot } from './health';

// A run's pages/s and items/s (one source per figure, read through taskFigures.ts): while the run goes, over the last
// RATE_WINDOW_MS, or less early in the run (figures.ts recentWindowMs; as the status bar, the CLI and the ETA); once it is not going (paused, interrupted, stopped,
// finished), the average of its crawling time (the last seconds would show the drain, or a stale rate, and change
// from one reading to the next while nothing moves).

export interface RunRates {
  readonly pagesPerSec: number;
  readonly itemsPerSec: number;
  readonly elapsedMs: number;
  /** 'recent': the last seconds of a run that goes; 'run': the average over its crawling time. */
  readonly basis: 'recent' | 'run';
  /** The recent rates' window (figures.ts recentWindowMs: RATE_WINDOW_MS, shorter early in a run); null for 'run'. */
  readonly windowMs: number | null;
}

export interface RatesInput extends Pick<HealthSnapshot, 'stats' | 'history' | 'at'> {
  readonly run: Parameters<typeof runElapsedMs>[0] | null;
  /** Whether the run is going now (its phase is 'running', runPhase.ts). */
  readonly going: boolean;
}

export function runRates(h: RatesInput): RunRates {
  const elapsedMs = h.run ? runElapsedMs(h.run, h.at) : 0;
  const secs = Math.max(1, elapsedMs / 1000);
  if (!h.going)
    return {
      pagesPerSec: finishedPages(h.stats).total / secs,
      itemsPerSec: (h.stats?.items ?? 0) / secs,
      elapsedMs,
      basis: 'run',
      windowMs: null,
    };
  const finished = h.history.map((x) => ({ t: x.t, n: finishedOf(x) }));
  const windowMs = recentWindowMs(finished);
  return {
    pagesPerSec: rateOver(finished, windowMs),
    itemsPerSec: rateOver(
      h.history.map((x) => ({ t: x.t, n: x.items })),
      windowMs,
    ),
    elapsedMs,
    basis: 'recent',
    windowMs,
  };
}
