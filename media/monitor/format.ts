// Counts, rates and ages as the monitor writes them: pure functions (test/unit/webviewTexts.test.ts). Durations
// are shared/format.ts's fmtDuration, like every view's.

/** A count with thousands grouped the same in every locale (not rounded: the API's counts are integers). */
export const fmt = (n: number) => n.toLocaleString('en-US');
/** Pages a second, one decimal. */
export const fmtRate = (n: number) => n.toFixed(1);
/** How long ago, from an age in milliseconds. */
export const ago = (ms: number) =>
  ms < 60_000
    ? `${Math.round(ms / 1000)} s ago`
    : ms < 3_600_000
      ? `${Math.round(ms / 60_000)} min ago`
      : `${(ms / 3_600_000).toFixed(1)} h ago`;
