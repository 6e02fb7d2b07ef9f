import { lstatSync, readlinkSync, realpathSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';

// A task file's SQLite store stays in the task file's folder. The parse refuses `..` in the path (lexically,
// core/task/storeUrl.ts); this is the half only the file system can tell: a `data.db` (or a folder on its way)
// that is a symbolic link to somewhere else. A shared task folder with `data.db -> ~/.ssh/…` or `-> /etc/…` would
// have the crawl create, write or read a file the folder's author chose outside it. An absolute path in store.url
// is taken as meant (the user wrote it), so only relative paths come here.

const MAX_LINKS = 40;

/** The path with every symbolic link resolved, for the part that exists, dangling links included. */
function resolvedPath(path: string, depth = 0): string {
  if (depth > MAX_LINKS) throw new Error('too many levels of symbolic links');
  try {
    return realpathSync(path);
  } catch {
    // Missing (a store not yet created) or a dangling link: resolve the parent, then this name.
  }
  const parent = dirname(path);
  if (parent === path) return path;
  const dir = resolvedPath(parent, depth + 1);
  const here = join(dir, basename(path));
  try {
    if (lstatSync(here).isSymbolicLink()) {
      const target = readlinkSync(here);
      return resolvedPath(isAbsolute(target) ? target : resolve(dir, target), depth + 1);
    }
  } catch {
    // Does not exist: nothing more to resolve.
  }
  return here;
}

/**
 * Why the SQLite file `relativePath` (relative to `folder`, the task file's) is outside that folder once
 * symbolic links are resolved; null when it is inside.
 */
export function storeFileProblem(relativePath: string, folder: string): string | null {
  let root: string;
  let real: string;
  try {
    root = resolvedPath(resolve(folder));
    real = resolvedPath(resolve(folder, relativePath));
  } catch (err) {
    return `'${relativePath}' cannot be resolved: ${(err as Error).message}`;
  }
  const rel = relative(root, real);
  if (rel !== '' && rel !== '..' && !rel.startsWith(`..${sep}`) && !isAbsolute(rel)) return null;
  return `'${relativePath}' is a symbolic link (or lies in a linked folder) that leads to ${real}, outside the task file's folder: keep the store inside the folder, or write the absolute path in store.url to use a file elsewhere on purpose`;
}

/** The check parseTask's callers pass (core/task/parse.ts ParseChecks) for a task file at `file`. */
export function storeChecksFor(file: string): { storeFile: (relativePath: string) => string | null } {
  const folder = dirname(resolve(file));
  return { storeFile: (p) => storeFileProblem(p, folder) };
}
