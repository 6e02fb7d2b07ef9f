// A worker started by the CLI or the extension must not outlive it. A parent that exits normally stops its
// workers itself, but one killed with SIGKILL, or crashed, cannot: its workers would crawl on with nobody
// watching. The supervisor gives each worker a stdin pipe and keeps the other end open; the kernel closes that
// end when the parent dies, however it dies, and the worker reads end-of-file. Works the same on every OS, with
// no polling. Workers started by hand from a shell (`crawl-studio worker`) are not watched.

export const PARENT_PIPE_ENV = 'CRAWL_STUDIO_PARENT_PIPE';

/** Calls `onGone` once, when the process that started this one with a parent pipe has exited. */
export function watchParent(onGone: () => void, env: NodeJS.ProcessEnv = process.env): boolean {
  if (env[PARENT_PIPE_ENV] !== '1') return false;
  const stdin = process.stdin;
  let fired = false;
  const fire = () => {
    if (fired) return;
    fired = true;
    onGone();
  };
  stdin.once('end', fire);
  stdin.once('close', fire);
  stdin.once('error', fire);
  stdin.resume();
  // Watching must not keep a finished worker alive.
  (stdin as { unref?: () => void }).unref?.();
  return true;
}
