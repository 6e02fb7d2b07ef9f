import { workerMain } from './main';

// The worker bundle's entry (dist/worker.js). Kept apart from main.ts so the CLI can embed workerMain without
// also running it at load time. Its analysis thread runs dist/analysis.js (analysisEntry.ts).
workerMain(process.argv.slice(2)).catch((err: Error) => {
  process.stderr.write(`${err.message}\n`);
  process.exit(2);
});
