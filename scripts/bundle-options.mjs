// The esbuild options of every Node bundle of the product (extension, worker, analysis thread, CLI). esbuild.mjs
// builds dist/ and the packages with them, bench/build.mjs its own copy of the CLI and worker: one definition, so
// the benchmark measures what ships.
import { taskValidatorPlugin } from './esbuild-task-validator.mjs';

export const nodeBundleOptions = {
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'cjs',
  // A package's ES module build when it has one (today that changes only BullMQ, the one dependency with a
  // "module" field and no "exports" map): esbuild hoists and tree-shakes ES modules, where CommonJS stays wrapped
  // and reaches every export through `exports`. BullMQ's: 470 KB less in the worker bundle and ~10% less CPU per
  // crawled page (bench, interleaved A/B).
  mainFields: ['module', 'main'],
  loader: { '.lua': 'text', '.yaml': 'text' },
  // msgpackr-extract is msgpackr's optional native accelerator: never load a native module (DEVELOPERS rule);
  // msgpackr falls back to its pure-JS encoder when the require fails.
  external: ['vscode', 'msgpackr-extract', 'pg-native'],
  logLevel: 'warning',
  // parse.ts imports the task-file validator pre-compiled from the schema (no ajv.compile at start-up).
  plugins: [taskValidatorPlugin()],
};
