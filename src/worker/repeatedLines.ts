// While Redis is out of reach, every BullMQ connection of a worker emits its error on each reconnect attempt (two a
// task every 3 s): an outage of minutes filled the log, and the run's output, with the same line. The engine's own
// connection already says each attempt once, with its cause (redis/check.ts watchConnection). So a repeated line is
// said once a window, with how many times it came meanwhile.

export const REPEAT_WINDOW_MS = 60_000;

/** Decides which of a stream of lines to say: the first of its kind, then one a window with the count held back. */
export class RepeatedLines {
  private readonly seen = new Map<string, { saidAt: number; held: number }>();

  constructor(private readonly windowMs = REPEAT_WINDOW_MS) {}

  /** The line to say now (with the repeats held back since it was last said), or null to hold this one back. */
  next(line: string, now: number): string | null {
    const last = this.seen.get(line);
    if (last && now - last.saidAt < this.windowMs) {
      last.held++;
      return null;
    }
    this.seen.set(line, { saidAt: now, held: 0 });
    if (this.seen.size > 100) this.seen.delete(this.seen.keys().next().value!);
    return last && last.held > 0
      ? `${line} (and ${last.held} more times in the last ${Math.round((now - last.saidAt) / 1000)} s)`
      : line;
  }
}
