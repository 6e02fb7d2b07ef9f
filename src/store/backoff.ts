// Bounded exponential backoff with jitter, so a fleet of writers that lost the same database does not come back
// in lockstep and hammer it the moment it returns.

export interface BackoffOptions {
  /** Delay before the first retry. */
  readonly initialMs?: number;
  /** Ceiling: how long a recovered store may wait, at most, before a writer notices. */
  readonly maxMs?: number;
}

/** Delay before retry number `attempt` (1-based): between half and all of min(max, initial * 2^(attempt-1)). */
export function backoffDelay(attempt: number, opts: BackoffOptions = {}, random: () => number = Math.random): number {
  const initial = Math.max(1, opts.initialMs ?? 200);
  const max = Math.max(initial, opts.maxMs ?? 5_000);
  const ceiling = Math.min(max, initial * 2 ** Math.min(Math.max(0, attempt - 1), 30));
  return Math.round(ceiling / 2 + (random() * ceiling) / 2);
}
