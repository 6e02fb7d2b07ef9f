// Waiting for a condition, not a clock: the one polling helper of the mocha suites (the extension-host suites have
// their own in test/extension/support.ts, which may import vscode). A test waits for what a sleep stood for, so
// it is as fast as the machine allows and no slower machine makes it fail.

type Truthy<T> = Exclude<T, false | null | undefined | 0 | ''>;

/**
 * Polls `probe` every `everyMs` until it returns something truthy, and returns that; a probe that throws counts
 * as not yet. Fails after `timeoutMs` naming `what` and the last value or error seen.
 */
export async function until<T>(
  what: string,
  probe: () => T | Promise<T>,
  timeoutMs = 60_000,
  everyMs = 100,
): Promise<Truthy<T>> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await probe();
      if (v) return v as Truthy<T>;
      last = v;
    } catch (err) {
      last = err instanceof Error ? `error: ${err.message}` : err;
    }
    if (Date.now() > deadline)
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${what} (last: ${typeof last === 'string' ? last : JSON.stringify(last)})`,
      );
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** Whether process `pid` is running (signal 0 checks without sending anything). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
