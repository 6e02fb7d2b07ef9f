// Process measurement from /proc: CPU seconds of a whole process tree, its peak resident memory, and the
// same for a long-running server (Redis, nginx, PostgreSQL) over an interval.
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';

const TICK = 100; // USER_HZ on Linux
const PAGE = 4096;

/** utime, stime, cutime, cstime (seconds), rss (bytes), ppid of one process, or null when it is gone. */
export function procStat(pid) {
  let text;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  return parseStat(text);
}

function parseStat(text) {
  const f = text.slice(text.lastIndexOf(')') + 2).split(' ');
  // f[0] is field 3 (state); field N is f[N - 3].
  return {
    ppid: Number(f[1]),
    utime: Number(f[11]) / TICK,
    stime: Number(f[12]) / TICK,
    cutime: Number(f[13]) / TICK,
    cstime: Number(f[14]) / TICK,
    rss: Number(f[21]) * PAGE,
  };
}

function allStats() {
  const out = new Map();
  for (const name of readdirSync('/proc')) {
    if (name.charCodeAt(0) < 48 || name.charCodeAt(0) > 57) continue;
    const s = procStat(name);
    if (s) out.set(Number(name), s);
  }
  return out;
}

/** CPU seconds (user + system) a running process has used so far. */
export function cpuOf(pid) {
  const s = procStat(pid);
  return s ? s.utime + s.stime : 0;
}

/**
 * Runs a command as the child of a small bash wrapper that, once the command has exited, copies its own
 * /proc stat: the wrapper's cutime/cstime then hold the CPU of the whole tree (every process the command
 * started and reaped). Peak RSS is the largest sum of the tree's resident memory seen by a sampler.
 */
const running = new Set();
/** Kills every measured process tree still running (each is its own process group). */
export function killRunning() {
  for (const pid of running) {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}

/**
 * A cpuacct cgroup (v1, as root) of its own for one measured run, or null where there is none to make. A browser's
 * processes are not all reaped up the tree (a renderer may outlive its zygote's wait, an orphan is reparented), so the
 * wrapper's cutime can miss them; every process started in the cgroup is counted in it, however it ends.
 */
function makeCgroup() {
  const root = '/sys/fs/cgroup/cpuacct';
  if (!existsSync(join(root, 'cgroup.procs'))) return null;
  const dir = join(root, `cs-bench-${process.pid}-${Date.now().toString(36)}`);
  try {
    mkdirSync(dir);
    return dir;
  } catch {
    return null;
  }
}

/** The cgroup's CPU seconds; then every process still in it is killed and the cgroup removed. */
async function closeCgroup(dir) {
  let cpuS = null;
  try {
    cpuS = Number(readFileSync(join(dir, 'cpuacct.usage'), 'utf8')) / 1e9;
  } catch {
    // unreadable: no figure
  }
  for (let i = 0; i < 50; i++) {
    let pids = [];
    try {
      pids = readFileSync(join(dir, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean).map(Number);
    } catch {
      break;
    }
    if (pids.length === 0) break;
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone
      }
    }
    await sleep(100);
  }
  try {
    rmdirSync(dir);
  } catch {
    // still busy: left for the next reboot, harmless
  }
  return cpuS;
}

/** Proportional set size of a process (its share of pages it shares with others), bytes; 0 when unreadable. */
function pssOf(pid) {
  try {
    const m = /^Pss:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'));
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

/**
 * Options: `cgroup` counts the CPU in a cgroup of the run's own when the machine allows (see makeCgroup); `pss` also
 * samples the tree's proportional set size every fifth sample (RSS summed over a browser's processes counts the pages
 * they share once per process).
 */
export function runMeasured(
  cmd,
  args,
  { cwd, env, stdoutFile, sampleMs = 250, timeoutMs = 15 * 60_000, onSample, cgroup = false, pss = false } = {},
) {
  const statFile = join(cwd ?? process.cwd(), `.cpu-${process.pid}-${Date.now()}.stat`);
  const group = cgroup ? makeCgroup() : null;
  const script = `${group ? 'echo $$ > "$BENCH_CGROUP/cgroup.procs"; ' : ''}"$@"; rc=$?; cat /proc/$$/stat > "$BENCH_STAT_FILE"; exit $rc`;
  const started = process.hrtime.bigint();
  const child = spawn('bash', ['-c', script, 'bash', cmd, ...args], {
    cwd,
    env: { ...process.env, ...env, BENCH_STAT_FILE: statFile, ...(group ? { BENCH_CGROUP: group } : {}) },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  running.add(child.pid);
  let out = '';
  child.stdout.on('data', (b) => (out += b));
  child.stderr.on('data', (b) => (out += b));
  let peakRss = 0;
  let peakPss = 0;
  let samples = 0;
  const perPid = new Map();
  // CPU per thread, as last seen: a thread's share of the work (main, analysis, V8's compiler and GC helpers).
  const perThread = new Map();
  const sample = () => {
    const stats = allStats();
    const tree = new Set([child.pid]);
    let grew = true;
    while (grew) {
      grew = false;
      for (const [pid, s] of stats) if (!tree.has(pid) && tree.has(s.ppid)) (tree.add(pid), (grew = true));
    }
    let rss = 0;
    for (const pid of tree) {
      const s = stats.get(pid);
      if (!s) continue;
      rss += s.rss;
      if (pid !== child.pid) {
        perPid.set(pid, {
          cpu: s.utime + s.stime,
          rss: Math.max(s.rss, perPid.get(pid)?.rss ?? 0),
          cmd: perPid.get(pid)?.cmd ?? cmdline(pid),
        });
        for (const [tid, t] of threadStats(pid)) perThread.set(`${pid}:${tid}`, { pid, tid, cpu: t.utime + t.stime });
      }
    }
    peakRss = Math.max(peakRss, rss);
    if (pss && samples++ % 5 === 0) {
      let sum = 0;
      for (const pid of tree) sum += pssOf(pid);
      peakPss = Math.max(peakPss, sum);
    }
    onSample?.();
  };
  const timer = setInterval(sample, sampleMs);
  const killer = setTimeout(() => process.kill(-child.pid, 'SIGKILL'), timeoutMs);
  return new Promise((resolve) => {
    child.on('exit', async (code, signal) => {
      running.delete(child.pid);
      clearInterval(timer);
      clearTimeout(killer);
      const wallS = Number(process.hrtime.bigint() - started) / 1e9;
      let cpuS = null;
      try {
        const s = parseStat(readFileSync(statFile, 'utf8'));
        cpuS = s.cutime + s.cstime;
      } catch {
        // the wrapper was killed: no total
      }
      rmSync(statFile, { force: true });
      // The cgroup's figure includes the wrapper's own few milliseconds; the reaped tree's is kept beside it.
      const groupCpuS = group ? await closeCgroup(group) : null;
      resolve({
        code,
        signal,
        wallS,
        cpuS: groupCpuS ?? cpuS,
        reapedCpuS: cpuS,
        cpuFrom: groupCpuS !== null ? 'cgroup' : 'reaped',
        peakRss,
        peakPss: pss ? peakPss : null,
        output: out,
        processes: [...perPid.entries()].map(([pid, p]) => ({ pid, ...p })),
        threads: [...perThread.values()],
      });
    });
  });
}

function threadStats(pid) {
  const out = [];
  let tids;
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return out;
  }
  for (const tid of tids) {
    try {
      out.push([Number(tid), parseStat(readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8'))]);
    } catch {
      // the thread ended
    }
  }
  return out;
}

function cmdline(pid) {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean).slice(0, 3).join(' ').slice(0, 120);
  } catch {
    return '?';
  }
}

export function sleep(ms) {
  return new Promise((r) => setTimeout(r, ms));
}

export function rmrf(p) {
  rmSync(p, { recursive: true, force: true });
}

/** Busy share of all CPUs over `ms` (0-1), from /proc/stat (idle + iowait count as idle). */
async function machineBusy(ms) {
  const read = () => {
    const f = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
    const idle = f[3] + (f[4] ?? 0);
    return { idle, total: f.reduce((a, b) => a + b, 0) };
  };
  const a = read();
  await sleep(ms);
  const b = read();
  const total = b.total - a.total;
  return total > 0 ? 1 - (b.idle - a.idle) / total : 0;
}

/**
 * Flushes dirty pages (`sync`) and waits until the machine is quiet: busy under `threshold` over half a second,
 * for at most `maxMs`. The previous crawler's writeback (Crawlee's persisted storage: up to 20 CPU-seconds of
 * kernel work in one run) would otherwise land in the next crawler's row. Returns the last busy share seen.
 */
export async function settle({ threshold = 0.1, maxMs = 20_000 } = {}) {
  try {
    execFileSync('sync', [], { stdio: 'ignore', timeout: 30_000 });
  } catch {
    // best effort: the wait below still lets writeback finish
  }
  const until = Date.now() + maxMs;
  let busy = 1;
  while (Date.now() < until) {
    busy = await machineBusy(500);
    if (busy < threshold) break;
  }
  return busy;
}
