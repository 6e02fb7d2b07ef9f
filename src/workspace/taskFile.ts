import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { TaskFileError } from '../core/task/diagnostics';
import type { CrawlTask } from '../core/task/model';
import { parseTask, type ParseChecks, type ParseResult } from '../core/task/parse';
import { storeChecksFor } from './storePlace';

// The task file read from disk: the one edge where a task comes off the file system (the CLI and the worker
// processes; the editor parses the open document's text instead). Parsing stays in src/core, which does no I/O.

/**

 * Parses a task file's text with this process's environment: its `${VAR}`s are read from process.env here, at the
 * edge, so src/core reads none. Every front end parses through this (the extension's engine() hands it out).
 */
export function parseTaskText(text: string, file: string, checks: Omit<ParseChecks, 'env'> = {}): ParseResult {
  return parseTask(text, file, { ...checks, env: process.env });
}

/**
 * Reads, parses and validates a task file; throws TaskFileError with every problem found. `allowScripts: false`
 * refuses `browser.actions` scripts (the CLI without --allow-scripts), at their line.
 */
export async function loadTaskFile(path: string, opts: { readonly allowScripts?: boolean } = {}): Promise<CrawlTask> {
  const file = resolve(path);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    throw new Error(`cannot read task file ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`, {
      cause: err,
    });
  }
  const { task, diagnostics } = parseTaskText(text, file, { ...storeChecksFor(file), allowScripts: opts.allowScripts });
  if (!task) throw new TaskFileError(file, diagnostics);
  return task;
}
