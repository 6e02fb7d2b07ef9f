// Per-host back-off, as Scrapy's AutoThrottle does it, inside one worker: a host that answers 429 or 503, or slows
// down well past how fast it answered when calm, gets fewer of this worker's requests at once; one that answers well
// gets them back one at a time (additive increase, multiplicative decrease, as TCP). Never more than the task's
// per-host concurrency, which the host gate (frontier/politeness.ts) enforces across the fleet anyway; this only ever
// lowers it for a host that pushes back, so one slow or shedding host does not cost the worker its other hosts.

export interface HostCap {
  /** Requests to the host this worker may have in flight now. */
  readonly cap: number;
  /** Answers without a push-back since the cap last moved. */
  readonly streak: number;
  /** When the cap was last cut (ms): one cut per `cutEveryMs`, whatever a burst of 503s says. */
  readonly cutAt: number;
  /** The fastest the host answered (ms). */
  readonly baseMs: number | null;
}

const HOST_THROTTLE = {
  cutEveryMs: 1_000,
  /** Slower than this many times its fastest (and `slackMs` more) is a push-back. */
  slow: 4,
  slackMs: 100,
} as const;

export function hostCap(max: number): HostCap {
  return { cap: max, streak: 0, cutAt: -Infinity, baseMs: null };
}

export interface HostAnswer {
  readonly at: number;
  readonly ms: number;
  readonly throttled: boolean;
}

/** The host's cap after one answer, and why it moved (null when it did not). */
export function afterAnswer(
  max: number,
  s: HostCap,
  a: HostAnswer,
): { readonly state: HostCap; readonly reason: string | null } {
  const slow = !a.throttled && s.baseMs !== null && a.ms >= HOST_THROTTLE.slow * s.baseMs + HOST_THROTTLE.slackMs;
  if (a.throttled || slow) {
    if (a.at - s.cutAt < HOST_THROTTLE.cutEveryMs || s.cap <= 1) return { state: { ...s, streak: 0 }, reason: null };
    const cap = Math.max(1, Math.floor(s.cap / 2));
    const why = a.throttled
      ? 'answered 429/503'
      : `answered in ${Math.round(a.ms)} ms, ${(a.ms / s.baseMs!).toFixed(1)}× its fastest`;
    return {
      state: { ...s, cap, streak: 0, cutAt: a.at },
      reason: `${why}: at most ${cap} request(s) at once (was ${s.cap})`,
    };
  }
  const baseMs = s.baseMs === null ? a.ms : Math.min(s.baseMs, a.ms);
  const streak = s.streak + 1;
  // One more after a cap's worth of good answers: about one step per round trip.
  if (s.cap < max && streak >= s.cap) return { state: { ...s, baseMs, cap: s.cap + 1, streak: 0 }, reason: null };
  return { state: { ...s, baseMs, streak: Math.min(streak, max) }, reason: null };
}
