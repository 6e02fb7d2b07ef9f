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

/** Why a file could not be read, in words: "no such file (ENOENT)" rather than the bare code. */
export function unreadableReason(err: unknown): string {
  const code = (err as NodeJS.ErrnoException).code;
  const words: Record<string, string> = {
    ENOENT: 'no such file',
    EISDIR: 'a folder, not a file',
    EACCES: 'permission denied',
    EPERM: 'permission denied',
  };
  if (code && words[code]) return `${words[code]} (${code})`;
  return code ?? (err instanceof Error ? err.message : String(err));
}

/** A task file that cannot be read at all: a wrong command line (exit 2), as a file with errors is. */
export class TaskFileUnreadable extends Error {
  constructor(
    readonly file: string,
    cause: unknown,
  ) {
    super(`cannot read task file ${file}: ${unreadableReason(cause)}`, { cause });
    this.name = 'TaskFileUnreadable';
  }
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
    throw new TaskFileUnreadable(file, err);
  }
  const { task, diagnostics } = parseTaskText(text, file, { ...storeChecksFor(file), allowScripts: opts.allowScripts });
  if (!task) throw new TaskFileError(file, diagnostics);
  return task;
}
