// Per-host back-off, as Scrapy's AutoThrottle does it, inside one worker: a host that answers 429 or 503, or slows
// down well past how fast it answered when calm, gets fewer of this worker's requests at once; one that answers well
// gets them back one at a time (additive increase, multiplicative decrease, as TCP). Never more than the task's
// per-host concurrency, which the host gate (frontier/politeness.ts) enforces across the fleet anyway; this only ever
// lowers it for a host that pushes back, so one slow or shedding host does not cost the worker its other hosts.
//
// Unlike TCP, a host that answered 429/503 with N of this worker's requests out is not probed at N again for a while
// (its ceiling): a site that sheds above a fixed limit would otherwise be sent one request too many, and answer 503,
// every time the cap climbed back, for the whole crawl (seen on a busy machine, where the worker-wide back-off of
// concurrency.ts, which judges shares of answers, did not see enough of them to act).

export interface HostCap {
  /** Requests to the host this worker may have in flight now. */
  readonly cap: number;
  /** Answers without a push-back since the cap last moved. */
  readonly streak: number;
  /** When the cap was last cut (ms): one cut per `cutEveryMs`, whatever a burst of 503s says. */
  readonly cutAt: number;
  /** The fastest the host answered (ms). */
  readonly baseMs: number | null;
  /** Requests at once the host answered 429/503 at: the cap stays under `n` until `until` (ms). */
  readonly ceiling: { readonly n: number; readonly until: number } | null;
}

export const HOST_THROTTLE = {
  cutEveryMs: 1_000,
  /** Slower than this many times its fastest (and `slackMs` more) is a push-back. */
  slow: 4,
  slackMs: 100,
  /** How long a host's ceiling holds (as long as the worker-wide one, concurrency.ts's `ceilingMs`). */
  ceilingMs: 300_000,
} as const;

export function hostCap(max: number): HostCap {
  return { cap: max, streak: 0, cutAt: -Infinity, baseMs: null, ceiling: null };
}

export interface HostAnswer {
  readonly at: number;
  readonly ms: number;
  readonly throttled: boolean;
  /** This worker's requests to the host in flight when this one was sent, itself included. */
  readonly inFlight: number;
}

/** The host's cap after one answer, and why it moved (null when it did not). */
export function afterAnswer(
  max: number,
  before: HostCap,
  a: HostAnswer,
): { readonly state: HostCap; readonly reason: string | null } {
  const s: HostCap = before.ceiling && before.ceiling.until <= a.at ? { ...before, ceiling: null } : before;
  const slow = !a.throttled && s.baseMs !== null && a.ms >= HOST_THROTTLE.slow * s.baseMs + HOST_THROTTLE.slackMs;
  if (a.throttled || slow) {
    const ceiling = a.throttled
      ? { n: Math.max(2, Math.min(s.ceiling?.n ?? Infinity, a.inFlight)), until: a.at + HOST_THROTTLE.ceilingMs }
      : s.ceiling;
    const underCeiling = ceiling ? Math.min(s.cap, ceiling.n - 1) : s.cap;
    if (a.at - s.cutAt < HOST_THROTTLE.cutEveryMs || s.cap <= 1)
      return { state: { ...s, cap: underCeiling, streak: 0, ceiling }, reason: null };
    // Half of what was out, not of the cap: a cap above what the worker could send cuts nothing.
    const cap = Math.max(1, Math.floor(Math.min(s.cap, a.inFlight) / 2));
    const why = a.throttled
      ? `answered 429/503 with ${a.inFlight} request(s) out`
      : `answered in ${Math.round(a.ms)} ms, ${(a.ms / s.baseMs!).toFixed(1)}× its fastest`;
    const kept = ceiling && a.throttled ? `, fewer than ${ceiling.n} for ${HOST_THROTTLE.ceilingMs / 60_000} min` : '';
    return {
      state: { ...s, cap, streak: 0, cutAt: a.at, ceiling },
      reason: `${why}: at most ${cap} request(s) at once (was ${s.cap})${kept}`,
    };
  }
  const baseMs = s.baseMs === null ? a.ms : Math.min(s.baseMs, a.ms);
  const streak = s.streak + 1;
  const highest = s.ceiling ? Math.min(max, s.ceiling.n - 1) : max;
  // One more after a cap's worth of good answers: about one step per round trip.
  if (s.cap < highest && streak >= s.cap) return { state: { ...s, baseMs, cap: s.cap + 1, streak: 0 }, reason: null };
  return { state: { ...s, baseMs, streak: Math.min(streak, max) }, reason: null };
}
