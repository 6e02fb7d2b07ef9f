import { isMainThread, workerData } from 'node:worker_threads';
import { ANALYSIS_ROLE, runAnalysisThread } from './analysis';
import { workerMain } from './main';

// The worker bundle's entry (dist/worker.js). Kept apart from main.ts so the CLI can embed workerMain without
// also running it at load time. Started as a thread by a worker, the same bundle parses and extracts pages.
if (!isMainThread && (workerData as { role?: string } | null)?.role === ANALYSIS_ROLE) {
  runAnalysisThread();
} else {
  workerMain(process.argv.slice(2)).catch((err: Error) => {
    process.stderr.write(`${err.message}\n`);
    process.exit(2);
  });
}
