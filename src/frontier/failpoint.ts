import { closeSync, mkdirSync, openSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { join } from 'node:path';

/**
 * Fault injection at a named point of a page's life, for the fault suite (test/faults): a worker that reaches
 * the point for a page whose record (store/buffer.ts pageEntry) matches a regex kills itself with SIGKILL there,
 * once per matched text (e.g. the page's URL) across every process that shares the marker folder. The points are the windows between two writes that must compose into one recoverable
 * step (`before-last-call`: a page's links queued in other partitions, and the page finished in its own, whatever
 * their order), which no kill from outside can hit reliably. Off unless CS_FAILPOINT is set, as `<point>\t<record regex>\t<marker folder>`: one environment
 * read per call, nothing else.
 */
export function failpoint(point: 'before-last-call', record: string): void {
  const spec = process.env.CS_FAILPOINT;
  if (!spec) return;
  const [name, pattern, dir] = spec.split('\t');
  const match = name === point && pattern && dir ? new RegExp(pattern).exec(record) : null;
  if (!match) return;
  mkdirSync(dir!, { recursive: true });
  try {
    // 'wx': the first process to get here for this page creates the marker, and dies; the page's retry goes on.
    closeSync(openSync(join(dir!, createHash('sha1').update(`${point} ${match[0]}`).digest('hex')), 'wx'));
  } catch {
    return;
  }
  process.kill(process.pid, 'SIGKILL');
}
