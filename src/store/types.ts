import type { ExtractedItem, ItemProblem } from '../core/extract/extract';

// The contract between workers and the storage pipeline. Workers append one PageRecord per fetched page to a
// durable Redis stream (never the job queue); writers drain the stream into an ItemStore in batches.

export interface PageRecord {
  readonly task: string;
  readonly run: string;
  readonly url: string;
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
}

export type ConflictPolicy = 'ignore' | 'update';
