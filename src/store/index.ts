// The item storage pipeline: workers buffer pages in a Redis stream (buffer), writers drain it into a store in
// idempotent batches (writer, merge), stores keep the items (sqlite, postgres, chosen by open), and exports
// stream them out (export, csv).

export { bufferPage, bufferPageIn, encodePage, PAGE_FIELD } from './buffer';
export { startWriter } from './writer';
export type { WriterCounters, WriterHandle, WriterOptions } from './writerTypes';
export {
  decodeEntry,
  mergeBatch,
  DEFAULT_LIMITS,
  type DecodedEntry,
  type MergeLimits,
  type MergedBatch,
} from './merge';
export { backoffDelay, type BackoffOptions } from './backoff';
export { SqliteStore, type SqliteStoreOptions } from './sqlite';
export { PostgresStore, type PostgresStoreOptions } from './postgres';
export { openStore, createStore, resolveStoreUrl, storeUrlOf, type OpenStoreOptions, type StoreTarget } from './open';
export { exportItems, type ExportFormat, type ExportOptions, type ExportResult } from './export';
export { csvCell, csvRow, parseCsv } from './csv';
export { itemTableName, schemaForTask } from './tables';
export * from './types';
export {
  changesSince,
  changedItems,
  defaultChangeRun,
  runChangeCounts,
  selectRuns,
  type ChangedItem,
  type ChangeReport,
  type FieldDiff,
} from './history/query';
export { exportChanges, changeRecord, CHANGE_COLUMNS } from './history/export';
export type { ItemChange } from './history/log';
