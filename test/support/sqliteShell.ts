import { execFile } from 'node:child_process';

// The sqlite3 shell: a separate SQLite build that opens a file read-write by default, as DB Browser, Datasette or
// a notebook would. The store must be safe to read with it during a crawl (issue 22, item 1).

/** Runs `sql` on `file`; what it printed and what it complained of. Rejects only when the shell is not installed. */
export function sqliteShell(file: string, sql: string): Promise<{ out: string; err: string }> {
  return new Promise((resolve, reject) =>
    execFile(
      'sqlite3',
      ['-batch', '-noheader', '-separator', ' ', file, sql],
      { timeout: 20_000 },
      (error, stdout, stderr) => {
        if (error && /ENOENT/.test(error.message))
          reject(new Error('the sqlite3 shell is not installed (scripts/setup.sh test installs it)'));
        else resolve({ out: String(stdout), err: String(stderr) + (error && !stderr ? error.message : '') });
      },
    ),
  );
}
