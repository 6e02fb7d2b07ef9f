import { readdirSync, readFileSync } from 'node:fs';

// The browsers of this worker, as the kernel sees them: a worker's only child processes are the Chromiums it
// launched (and their renderers, GPU and utility processes below them), so its descendants are what they cost and
// what must die with them. Linux only (/proc); elsewhere nothing is measured and only Playwright's own close kills.

interface Proc {
  readonly pid: number;
  readonly ppid: number;
  readonly pgid: number;
  readonly rssPages: number;
}

function readProcs(): Proc[] {
  let names: string[];
  try {
    names = readdirSync('/proc');
  } catch {
    return [];
  }
  const out: Proc[] = [];
  for (const name of names) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      // The command name may hold spaces and parentheses: the fields start after its last ')'.
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      out.push({ pid: Number(name), ppid: Number(f[1]), pgid: Number(f[2]), rssPages: Number(f[21]) });
    } catch {
      // Exited while we looked.
    }
  }
  return out;
}

/** Every process below `root` (default: this one). */
export function descendants(root = process.pid): Proc[] {
  const procs = readProcs();
  const byParent = new Map<number, Proc[]>();
  for (const p of procs) byParent.set(p.ppid, [...(byParent.get(p.ppid) ?? []), p]);
  const out: Proc[] = [];
  const stack = [root];
  while (stack.length) {
    for (const child of byParent.get(stack.pop()!) ?? []) {
      out.push(child);
      stack.push(child.pid);
    }
  }
  return out;
}

/**
 * Memory of every process below this one, in bytes (0 where /proc is not there): each process's proportional set
 * size, its private pages and its share of the pages it shares. Chromium's processes share most of their memory
 * (the binary, fonts, the zygote's heap), so their resident sizes summed count it once per process: 1.3-1.7 GB for a
 * browser whose PSS was about 600 MB, which retired it every 10 pages (bench, issue 18). RSS where smaps_rollup
 * cannot be read.
 */
export function descendantsMemory(): number {
  return descendants().reduce((sum, p) => sum + (pssOf(p.pid) ?? p.rssPages * 4096), 0);
}

function pssOf(pid: number): number | null {
  try {
    const m = /^Pss:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'));
    return m ? Number(m[1]) * 1024 : null;
  } catch {
    return null;
  }
}

/**
 * Kills the process groups of this process's children: Playwright launches each browser as a group leader, so
 * a group is one browser with everything it started. For a browser that no longer answers its close().
 */
export function killChildGroups(only?: (pid: number) => boolean): void {
  for (const p of descendants()) {
    if (p.ppid !== process.pid || p.pgid !== p.pid) continue;
    if (only && !only(p.pid)) continue;
    try {
      process.kill(-p.pgid, 'SIGKILL');
    } catch {
      // Gone already.
    }
  }
}
