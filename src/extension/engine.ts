// The engine parts the extension needs: BullMQ, ioredis, cheerio, yaml, ajv, the stores. Loaded on first use
// through engine() below, never at activation: esbuild wraps dynamically imported modules in lazy
// initialisers, so opening a folder costs only the VS Code glue.
// The task parse with this process's environment (workspace/taskFile.ts): core's parseTask reads no process.env.
export { parseTaskText as parseTask } from '../workspace/taskFile';
export { fieldSpan, outlineTask } from '../core/task/outline';
export { CrawlQueue } from '../frontier/crawl';
export { connectRedis } from '../redis/connect';
export { checkDatabase } from '../redis/check';
export { launchCrawl } from '../run/launcher';
export { QueueModel } from './explorer/queueModel';
export { readTaskStatus } from '../observe/taskStatus';
export { fixtureDir, testTask } from '../workspace/fixtureStore';
export { formatDiagnostic } from '../core/task/diagnostics';
export { formatTestReport } from '../core/designer/fixtures';
