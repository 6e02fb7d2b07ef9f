import { workerMain } from './main';

// The worker bundle's entry (dist/worker.js). Kept apart from main.ts so the CLI can embed workerMain without
// also running it at load time. Its analysis thread runs dist/analysis.js (analysisEntry.ts).
// The extension host requires the same bundle for the engine it shares with its workers (scripts/shared-engine.mjs):
// only as a process's main module (dist/worker.js runs the bundle as itself, see codeCache.ts) does it run a worker.
if (require.main === module) {
  workerMain(process.argv.slice(2)).catch((err: Error) => {
    process.stderr.write(`${err.message}\n`);
    process.exit(2);
  });
}

// An ES module (for esbuild, one that exports), so `module` above is the bundle's own: esbuild would give a CommonJS
// file a `module` of its own, never the process's main one.
export {};
