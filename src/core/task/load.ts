import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { TaskFileError } from './diagnostics';
import type { CrawlTask } from './model';
import { parseTask } from './parse';

/** Reads, parses and validates a task file; throws TaskFileError with every problem found. */
export async function loadTaskFile(path: string): Promise<CrawlTask> {
  const file = resolve(path);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    throw new Error(`cannot read task file ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  const { task, diagnostics } = parseTask(text, file);
  if (!task) throw new TaskFileError(file, diagnostics);
  return task;
}
