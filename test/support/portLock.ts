import { openSync, closeSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { until } from './until';

// A few tests need a fixed port: the demo's 8737, which `crawl-studio demo` serves on and the extension's Open the
// Demo Shop tries first. `npm test` runs its stages side by side (mocha beside the UI tests), so two of them could
// want it at once, and a test that finds it taken cannot run (CI, 2026-12-07: the CLI's demo test found it held by
// a workbench of the UI stage). Such tests take this lock first: a file in the run's temporary folder, which every
// stage shares (scripts/test.mjs sets TMPDIR), holding the owner's pid, so a lock left by a killed process is taken
// over.

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Waits until this process holds the suite's lock on `port`; returns what releases it. */
export async function lockPort(port: number, timeoutMs = 300_000): Promise<() => void> {
  const file = join(tmpdir(), `cs-port-${port}.lock`);
  const take = (): boolean => {
    try {
      const fd = openSync(file, 'wx');
      writeSync(fd, String(process.pid));
      closeSync(fd);
      return true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const owner = Number(readFileSync(file, 'utf8').trim());
      // Written between the open and the write, or left by a process that is gone.
      if (Number.isInteger(owner) && owner > 0 && !alive(owner)) rmSync(file, { force: true });
      return false;
    }
  };
  await until(`the suite's lock on port ${port} (${file})`, take, timeoutMs, 250);
  return () => rmSync(file, { force: true });
}
