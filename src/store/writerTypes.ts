import type { BackoffOptions } from './backoff';
import type { MergeLimits } from './merge';
import type { ConflictPolicy, ItemRow, ItemStore } from './types';

// What a store writer is given, what it counts, and what its caller holds (writer.ts starts one; streamWriter.ts
// is the drain of one items stream).

export interface WriterOptions {
  readonly task: string;
  readonly store: ItemStore;
  readonly policy?: ConflictPolicy;
  /** Items per batch (a page without items counts as one); a single read may overshoot a little. */
  readonly batchSize?: number;
  /** Longest wait between the first entry of a batch and its write. */
  readonly flushMs?: number;
  readonly group?: string;
  /** Unique per process; defaults to host:pid:random. */
  readonly consumer?: string;
  /** Heartbeat period; a writer whose heartbeat is 3 periods old is dead and its entries are taken over. */
  readonly heartbeatMs?: number;
  /** Entries pending this long are claimed even from a writer that looks alive (a hung one). */
  readonly claimIdleMs?: number;
  /**
   * Longest an idle read waits for entries before the loop looks around again (default 500 ms, at most heartbeatMs).
   * stop() ends such a read at once (CLIENT UNBLOCK).
   */
  readonly idleReadMs?: number;
  /** How often to look for dead writers' entries (flush looks at once). */
  readonly recoverEveryMs?: number;
  /** Retries while the store is unavailable: bounded exponential backoff. */
  readonly backoff?: BackoffOptions;
  readonly limits?: Partial<MergeLimits>;
  /** Where failures are reported (a failure repeated while backing off is reported once). */
  readonly log?: (message: string) => void;
  /**
   * Runs after each commit, before the batch's entries are acknowledged; throwing counts as a failed write (the
   * entries stay in the stream, retried with backoff). A store whose file was deleted still commits, into a file
   * nobody can open again: acknowledging those entries would delete the only copy of their items.
   */
  readonly verify?: () => void | Promise<void>;
  /** Fault injection for tests: runs after a batch committed and before its entries are acknowledged. */
  readonly afterCommit?: (ids: readonly string[]) => void | Promise<void>;
  /**
   * The items of each batch once it is committed and acknowledged (the library's `item` events). A batch replayed
   * after a crash comes again. Must not throw: what it throws is reported and ignored, the items are stored.
   */
  readonly onStored?: (items: readonly ItemRow[]) => void;
}

export interface WriterCounters {
  readonly task: string;
  readonly consumer: string;
  /** Items read from the stream (valid or not, replays included). */
  readonly received: number;
  /** Items dropped because the same (type, key) came twice in one batch. */
  readonly duplicates: number;
  /** Items whose key was already stored. */
  readonly conflicts: number;
  /** Item rows inserted or overwritten. */
  readonly written: number;
  readonly inserted: number;
  readonly updated: number;
  readonly pages: number;
  /** Error rows recorded (extraction problems, malformed items, rows the store rejected). */
  readonly errors: number;
  /** Batches committed. */
  readonly batches: number;
  readonly lastBatchMs: number;
  readonly avgBatchMs: number;
  /** Failed write attempts that were retried. */
  readonly retries: number;
  /** Entries taken over from dead or hung writers. */
  readonly claimed: number;
  readonly lastError: string | null;
  /** True while waiting for the store to come back. */
  readonly backingOff: boolean;
}

export interface WriterHandle {
  readonly consumer: string;
  /** Resolves once every entry in the stream when called has been stored (by this writer or another). */
  flush(opts?: { timeoutMs?: number }): Promise<void>;
  /** Finishes the batch in hand and stops; unread entries stay in the stream for the next writer. */
  stop(): Promise<void>;
  counters(): WriterCounters;
  /** Entries not yet stored (the stream's length). */
  backlog(): Promise<number>;
}
