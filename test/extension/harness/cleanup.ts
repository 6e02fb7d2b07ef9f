import { rmSync } from 'node:fs';

// Last-resort cleanup: process groups the harness started are killed (and their temporary folders removed)
// when this process exits or is interrupted, even if a test forgot to stop them. Normal teardown goes through
// CodeServer.stop().

const groups = new Map<number, string | undefined>();
let installed = false;

function killAll(): void {
  for (const [pid, dir] of groups) {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      // already gone
    }
    if (dir) rmSync(dir, { recursive: true, force: true });
  }
  groups.clear();
}

function onSignal(signal: NodeJS.Signals): void {
  killAll();
  process.exit(signal === 'SIGINT' ? 130 : 143);
}

/** Kill process group `pid` (and remove `dir`) if this process ends before untrack(pid). */
export function track(pid: number, dir?: string): void {
  groups.set(pid, dir);
  if (!installed) {
    installed = true;
    process.on('exit', killAll);
    process.once('SIGINT', onSignal);
    process.once('SIGTERM', onSignal);
  }
}

export function untrack(pid: number): void {
  groups.delete(pid);
  if (groups.size === 0 && installed) {
    installed = false;
    process.off('exit', killAll);
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}
