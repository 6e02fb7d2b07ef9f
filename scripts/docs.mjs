#!/usr/bin/env node
// Writes docs/task-file.md from the task schema, with the same generator the drift test runs.
import * as esbuild from 'esbuild';
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const built = esbuild.buildSync({
  entryPoints: ['src/core/task/schemaDoc.ts'],
  bundle: true,
  platform: 'node',
  format: 'cjs',
  write: false,
});
const mod = { exports: {} };
new Function('module', 'exports', 'require', built.outputFiles[0].text)(
  mod,
  mod.exports,
  createRequire(import.meta.url),
);
writeFileSync('docs/task-file.md', mod.exports.schemaReference());
console.log('docs/task-file.md written');
