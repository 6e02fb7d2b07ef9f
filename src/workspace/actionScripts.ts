import { readFile, realpath } from 'node:fs/promises';
import { dirname, isAbsolute, relative, resolve, sep } from 'node:path';
import { actionScripts } from '../core/task/actions';
import type { CrawlTask } from '../core/task/model';

// The scripts a task's `browser.actions` run (`evaluate: file.js`), read from the task file's folder once, when a
// worker (or `fixture save`, or the editor's preview) that may run them starts. The parse already refused paths
// that leave the folder as written; a symbolic link that leads out of it is refused here, as a store's is
// (storePlace.ts): a shared folder must not run a file its author placed elsewhere.

/** Largest script: an action is a few lines that click or expand, not an application. */
const MAX_SCRIPT_BYTES = 1024 * 1024;

/** Each script a task's actions name, by its name in the task file; throws naming the file and the script. */
export async function loadActionScripts(task: Pick<CrawlTask, 'file' | 'rules'>): Promise<Map<string, string>> {
  const folder = dirname(resolve(task.file));
  const scripts = new Map<string, string>();
  for (const name of actionScripts(task.rules)) {
    const fail = (why: string) => new Error(`${task.file}: browser.actions script '${name}' ${why}`);
    let real: string;
    try {
      real = await realpath(resolve(folder, name));
    } catch (err) {
      throw fail(`cannot be read: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    }
    const rel = relative(await realpath(folder), real);
    if (rel === '' || rel === '..' || rel.startsWith(`..${sep}`) || isAbsolute(rel))
      throw fail(`leads to ${real}, outside the task file's folder (a symbolic link): keep scripts inside the folder`);
    const text = await readFile(real, 'utf8');
    if (Buffer.byteLength(text) > MAX_SCRIPT_BYTES) throw fail(`is larger than ${MAX_SCRIPT_BYTES / 1024} KB`);
    scripts.set(name, text);
  }
  return scripts;
}
