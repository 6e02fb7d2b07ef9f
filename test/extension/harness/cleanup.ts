// Last-resort cleanup: process groups the harness started are killed when this process exits or is
// interrupted, even if a test forgot to stop them. Normal teardown goes through CodeServer.stop().

const groups = new Set<number>();
let installed = false;

function killAll(): void {
  for (const pid of groups) {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  groups.clear();
}

function onSignal(signal: NodeJS.Signals): void {
  killAll();
  process.exit(signal === 'SIGINT' ? 130 : 143);
}

export function track(pid: number): void {
  groups.add(pid);
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
