/// <reference path="../types.d.ts" />
// (The reference gives the declaration bundler, which compiles from this file alone, the build's module
// declarations: .lua scripts and the schema validator. No public type comes from there.)
// The `crawl-studio` package's library: what `import { runCrawl, loadTask } from 'crawl-studio'` gives a program
// (bundled as dist/index.js, its types as dist/index.d.ts). Everything here is public: keep it small and typed, and
// document a change in the README's "Library" section and the CHANGELOG.

export {
  runCrawl,
  Crawl,
  type RunOptions,
  type CrawlEvents,
  type CrawlProgress,
  type CrawledItem,
  type CrawlSummary,
  type RunFinished,
} from './crawl';
export { loadTask, type Task, type LoadTaskOptions } from './task';
export type { TaskDefinition } from '../core/task/parse';
export { TaskFileError, formatDiagnostic, type TaskDiagnostic } from '../core/task/diagnostics';
export type { CharsetWarning, CrawlStats, JobCounts, RunInfo } from '../frontier/types';
export type { StoredSummary } from '../run/launcher';
