import type { ExtractedItem, ItemProblem } from '../core/extract/extract';
import type { RevisitRecord } from '../core/pipeline/revisit';
import type { HistoryRetention, RunChangeCounts } from '../core/history/diff';
import type { ItemHistoryLog } from './history/log';

// The contract between workers and the storage pipeline. Workers append one PageRecord per fetched page to a
// durable Redis stream (never the job queue); writers drain the stream into an ItemStore in batches.

export interface PageRecord {
  readonly task: string;
  readonly run: string;
  readonly url: string;
  /** The request's method when it was not a GET (absent: GET). */
  readonly method?: string;
  /** Its body as sent, variables shown as `${NAME}` (never their values); absent without a body. */
  readonly body?: string;
  readonly rule: string;
  readonly depth: number;
  /** HTTP status, or null when no response arrived. */
  readonly status: number | null;
  /** ms since epoch. */
  readonly fetchedAt: number;
  readonly contentType: string | null;
  readonly bytes: number;
  readonly items: readonly ExtractedItem[];
  readonly problems: readonly ItemProblem[];
  /** Conditional re-crawl: the page's validators and what a 304 of it needs (its links null on a 304 itself). */
  readonly revisit?: RevisitRecord;
}

export type ConflictPolicy = 'ignore' | 'update';

/**
 * A page as stored: one row per (run, request), a request being its URL, method and body; a refetch in the same
 * run keeps the latest fetch.
 */
export interface PageRow {
  readonly run: string;
  readonly url: string;
  /** 'GET', or the request's method. */
  readonly method: string;
  /** The request's body as labelled (variables by name, cut at MAX_BODY_LABEL); '' for none. */
  readonly body: string;
  readonly rule: string;
  readonly depth: number;
  readonly status: number | null;
  readonly fetchedAt: number;
  readonly contentType: string | null;
  readonly bytes: number;
  /** Kept in page_validators (one row per URL, across runs); links null: keep the stored ones. */
  readonly revisit?: RevisitRecord;
}

/** A page_validators row, as a run start reads them back (run/revisitRestore.ts). */
export interface StoredRevisit extends RevisitRecord {
  readonly url: string;
  readonly fetchedAt: number;
}

/** An item ready for a store: validated, with its data already serialised once (size checks, bulk binds). */
export interface ItemRow {
  readonly type: string;
  readonly key: string;
  readonly json: string;
  /** Field names in the order the item lists them: stores keep a per-type column order for exports. */
  readonly fields: readonly string[];
  readonly url: string;
  readonly rule: string;
  readonly run: string;
  readonly fetchedAt: number;
}

export type ErrorKind = 'extract' | 'invalid' | 'store';

/**
 * One problem worth showing the person: an extraction problem reported by the worker ('extract'), an item or
 * stream entry the writer refused ('invalid'), or a page the store rejected ('store').
 */
export interface ErrorRow {
  /** Deterministic per stream entry, so replaying an entry after a crash never records its errors twice. */
  readonly id: string;
  readonly kind: ErrorKind;
  readonly run: string | null;
  readonly url: string | null;
  readonly rule: string | null;
  readonly type: string | null;
  readonly key: string | null;
  readonly message: string;
  /** ms since epoch: the page's fetch time, so a replay writes the identical row. */
  readonly at: number;
}

export interface RunSummary {
  readonly run: string;
  readonly task: string;
  readonly startedAt: number;
  readonly finishedAt: number;
  readonly durationMs: number;
  readonly pages: number;
  readonly items: number;
  readonly duplicates: number;
  readonly conflicts: number;
  readonly failures: number;
  /** Anything else the engine wants to keep with the run (stored as JSON). */
  readonly extra?: Readonly<Record<string, unknown>>;
}

export interface StoredItem {
  readonly type: string;
  readonly key: string;
  readonly data: Record<string, unknown>;
  readonly url: string | null;
  readonly rule: string | null;
  readonly run: string | null;
  readonly fetchedAt: number;
  readonly firstSeen: number;
  readonly updatedAt: number;
}

export type StoredError = ErrorRow;

/** How many items of a type a run stored last (an item kept by later runs counts under the one that wrote it). */
export interface RunItems {
  /** null: items stored without a run. */
  readonly run: string | null;
  readonly items: number;
  /** Fetch time of the run's earliest item (ms): runs are listed oldest first. */
  readonly firstFetchedAt: number;
}

export interface WriteResult {
  /** Item rows inserted or overwritten. */
  readonly written: number;
  readonly inserted: number;
  readonly updated: number;
  /** Items whose key was already stored (kept under 'ignore'; overwritten under 'update' unless older). */
  readonly conflicts: number;
  readonly pages: number;
  /** Error rows newly recorded (a replayed batch records none). */
  readonly errors: number;
}

export type ItemOrder = 'id' | 'key' | 'fetched_at' | 'first_seen' | 'updated_at';

export interface ReadOptions {
  readonly offset?: number;
  readonly limit?: number;
  /** Default 'id': the order items were first stored. */
  readonly orderBy?: ItemOrder;
  readonly descending?: boolean;
}

/** How a run closes in item history (ItemStore.endRun); see FinishRun. */
export interface RunHistoryClose {
  /** Only a complete run marks items removed (see diff.ts incompleteReason). */
  readonly complete: boolean;
  readonly retention: HistoryRetention;
}

export interface ItemStore {
  /** 'sqlite' or 'postgres'. */
  readonly kind: string;
  /** Where the store lives, safe to show (passwords redacted). */
  readonly location: string;
  open(): Promise<void>;
  close(): Promise<void>;
  /**
   * Writes pages, items and error rows in one transaction. Items must be unique by (type, key) within the call
   * (mergeBatch guarantees it). Idempotent: replaying the same call changes nothing under 'ignore', and under
   * 'update' rewrites the same values.
   */
  writeBatch(
    pages: readonly PageRow[],
    items: readonly ItemRow[],
    policy: ConflictPolicy,
    errors?: readonly ErrorRow[],
  ): Promise<WriteResult>;
  writeErrors(errors: readonly ErrorRow[]): Promise<number>;
  writeRunSummary(summary: RunSummary): Promise<void>;
  /**
   * A run's end: its summary row (as writeRunSummary) and its close in item history (history.finishRun: the items it
   * removed, its counts), in one transaction: one commit, and never a summary whose history was left open.
   */
  endRun(summary: RunSummary, history: RunHistoryClose): Promise<RunChangeCounts>;
  readRuns(): Promise<RunSummary[]>;
  readErrors(opts?: { offset?: number; limit?: number }): Promise<StoredError[]>;
  countErrors(): Promise<number>;
  countPages(): Promise<number>;
  /** Every page's revisit record with validators and links, read page by page (no lock held between pages). */
  iterateRevisits(opts?: { pageSize?: number }): AsyncIterable<StoredRevisit>;
  readItems(type: string, opts?: ReadOptions): Promise<StoredItem[]>;
  itemTypes(): Promise<string[]>;
  /** The type's field names in the order they were first seen: the column order of exports. */
  fieldNames(type: string): Promise<string[]>;
  count(type: string): Promise<number>;
  /** The runs whose items of `type` the store holds, oldest first, with their counts (the results view's run filter). */
  itemRuns(type: string): Promise<RunItems[]>;
  /** Every item of a type, in storage order, read page by page (no lock or cursor held between pages). */
  iterateItems(type: string, opts?: { pageSize?: number }): AsyncIterable<StoredItem>;
  /** Per item: the runs that first and last saw it, its field changes, its removal (history/log.ts). */
  readonly history: ItemHistoryLog;
}

/** The store cannot be reached right now (server down, file locked): retry later, nothing is wrong with the data. */
export class StoreUnavailableError extends Error {
  override readonly name = 'StoreUnavailableError';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** The store rejected the data itself (a constraint, a value it cannot hold): retrying the same rows fails again. */
export class StoreDataError extends Error {
  override readonly name = 'StoreDataError';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}
