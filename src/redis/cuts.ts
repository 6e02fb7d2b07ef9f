import { setTimeout as delay } from 'node:timers/promises';

// A Redis transaction or pipeline that ioredis rejected because its connection closed while it was in flight (a
// Sentinel client moving to the new master, a dropped link): ioredis sends single commands again but rejects these.
// Redis's trouble, not the page's, and the connection is back (or coming back) when the write is tried again. Only
// this message: a fetch's own network errors (ECONNRESET, …) are the page's, and a client closed for good says
// "Connection is closed". Used by the worker (a page's finish and counts) and the run's start (frontier/crawl.ts);
// test/integration/connectionCut.test.ts cuts connections so on purpose.

export function cutShort(err: unknown): boolean {
  return err instanceof Error && err.message.startsWith('Command aborted due to connection close');
}

/** How many times in a row a write cut short is tried again (backing off to 5 s): about a minute and a half. */
export const MAX_CUT_SHORT = 20;

/** The wait before try `tries` + 1 after a cut. */
export function cutBackoff(tries: number): Promise<void> {
  return delay(Math.min(5_000, 500 * tries));
}

/**
 * `write` again while it is cut short, up to MAX_CUT_SHORT times, `onCut` told each time. Only for writes that may
 * run twice (Redis may have run the first before the reply was lost): a script that is idempotent, a SET, a mark.
 */
export async function throughCuts<T>(write: () => Promise<T>, onCut: (err: Error) => void): Promise<T> {
  for (let tries = 1; ; tries++) {
    try {
      return await write();
    } catch (err) {
      if (!cutShort(err) || tries > MAX_CUT_SHORT) throw err;
      onCut(err as Error);
      await cutBackoff(tries);
    }
  }
}
