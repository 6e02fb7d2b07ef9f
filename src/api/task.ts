import { existsSync, readFileSync } from 'node:fs';
import { mkdir, rename, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { stringify } from 'yaml';
import { TaskFileError } from '../core/task/diagnostics';
import type { CrawlTask } from '../core/task/model';
import type { TaskDefinition } from '../core/task/parse';
import { parseTaskText } from '../workspace/taskFile';
import { loadTaskFile } from '../workspace/taskFile';
import { storeChecksFor } from '../workspace/storePlace';

// Tasks for the library: a task file, or an object of the same shape. Both are parsed and validated by parseTask,
// as the CLI and the editor do, so an object gets the same located errors (by field path) as a file.
//
// The workers are processes that read their task from a file (as `crawl-studio worker` on another machine does),
// so a task given as an object is written, when it runs, to `<dir>/<name>.crawl.yaml`: the task file it would
// have been. Its store and private Redis are then where a file's would be (`<dir>/.crawl/`), and every command of
// the CLI (status, export, quality, worker) works on it afterwards.

/** A validated task, ready to run: from loadTask(). */
export type Task = CrawlTask;

export interface LoadTaskOptions {
  /**
   * For a task given as an object: the folder its task file is written to when it runs, and where its store and
   * private Redis go (`.crawl/`). Default: the current folder.
   */
  readonly dir?: string;
}

/** First line of a task file written from an object: such a file is rewritten on each run, any other never. */
const WRITTEN_HEADER =
  "# Written by crawl-studio's runCrawl() from a task object: rewritten on every run, edits are lost.";

/** Tasks loadTask() returned, and for those given as objects the text of their file. */
const loaded = new WeakMap<CrawlTask, { readonly text: string | null }>();

/**
 * Reads and validates a task: a `*.crawl.yaml` path, or a task definition (the file's content as an object).
 * Throws TaskFileError with every problem found (`diagnostics`: path, message, line and column; for an object the
 * lines are those of its YAML form, the path is what to look at).
 */
export async function loadTask(source: string | TaskDefinition, options: LoadTaskOptions = {}): Promise<Task> {
  if (typeof source === 'string') {
    const task = await loadTaskFile(source);
    loaded.set(task, { text: null });
    return task;
  }
  if (typeof source !== 'object' || source === null || Array.isArray(source)) {
    throw new TypeError('loadTask takes the path of a task file or a task definition object');
  }
  const name = typeof source.name === 'string' && /^[A-Za-z0-9_-]{1,64}$/.test(source.name) ? source.name : 'task';
  const file = join(resolve(options.dir ?? '.'), `${name}.crawl.yaml`);
  let text: string;
  try {
    text = `${WRITTEN_HEADER}\n${stringify(source)}`;
  } catch (err) {
    throw new TypeError(`the task definition cannot be written as YAML: ${(err as Error).message}`, { cause: err });
  }
  const { task, diagnostics } = parseTaskText(text, file, storeChecksFor(file));
  if (!task) throw new TaskFileError(`${file} (from the task object)`, diagnostics);
  loaded.set(task, { text });
  return task;
}

/** Whether `value` is a task loadTask() returned (anything else given to runCrawl is a definition). */
export function isLoadedTask(value: unknown): value is Task {
  return typeof value === 'object' && value !== null && loaded.has(value as CrawlTask);
}

/**
 * Writes the file of a task given as an object, for its workers. A file already there is replaced only if an
 * earlier run wrote it: a person's own task file of the same name is never overwritten.
 */
export async function writeDefinedTask(task: Task): Promise<void> {
  const text = loaded.get(task)?.text;
  if (!text) return;
  if (existsSync(task.file)) {
    const current = readFileSync(task.file, 'utf8');
    if (current === text) return;
    if (!current.startsWith(WRITTEN_HEADER)) {
      throw new Error(
        `${task.file} exists and was not written by runCrawl(): give the task another name, or the run another 'dir'`,
      );
    }
  }
  await mkdir(dirname(task.file), { recursive: true });
  const tmp = `${task.file}.${process.pid}.tmp`;
  await writeFile(tmp, text);
  await rename(tmp, task.file);
}
