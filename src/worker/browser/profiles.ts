import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// Chromium's temporary profile directories. Playwright makes one per browser in the temp folder
// (`playwright_chromiumdev_profile-*`, 1-2 MB each) and removes it when the browser closes; a worker killed with
// SIGKILL never gets to, nor does a browser killed as hung. So each browser's directory gets an owner file naming
// the worker (pid and start time, so a reused pid is not taken for the owner), and a worker starting later removes
// the directories whose owner is dead, after killing a browser that still runs in one. A directory without an owner
// file is not ours (another program's Playwright, or one whose worker died before it wrote the file): left alone.
// Linux only (/proc); elsewhere nothing is claimed or swept.

const PREFIX = 'playwright_chromiumdev_profile-';
/** The owner file's name inside a profile directory. */
export const OWNER_FILE = 'crawl-studio.owner';

/** A process's start time (clock ticks since boot, /proc/PID/stat field 22), or null when it does not exist. */
function startTimeOf(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null;
  } catch {
    return null;
  }
}

/** The profile directory a browser process runs with (its --user-data-dir), or null. */
export function profileDirOf(pid: number): string | null {
  try {
    const args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    const arg = args.find((a) => a.startsWith('--user-data-dir='));
    return arg ? arg.slice('--user-data-dir='.length) : null;
  } catch {
    return null;
  }
}

/** Marks `dir` as this process's: a later worker removes it once this process is gone. */
export function claimProfile(dir: string): void {
  const started = startTimeOf(process.pid);
  if (started === null) return;
  try {
    writeFileSync(join(dir, OWNER_FILE), `${process.pid} ${started}\n`);
  } catch {
    // The browser removed it already, or the folder is not writable: nothing to clean later either way.
  }
}

/** Whether the owner written in `dir` is gone (dead, or its pid now another process's). */
function ownerGone(dir: string): boolean {
  let owner: string;
  try {
    owner = readFileSync(join(dir, OWNER_FILE), 'utf8');
  } catch {
    return false;
  }
  const [pid, started] = owner.trim().split(' ');
  if (!pid || !/^\d+$/.test(pid)) return false;
  return startTimeOf(Number(pid)) !== started;
}

/** Kills the browsers still running in `dir` (their owner died: nobody will close them) with their process groups. */
function killBrowsersIn(dir: string): void {
  let names: string[];
  try {
    names = readdirSync('/proc');
  } catch {
    return;
  }
  for (const name of names) {
    if (!/^\d+$/.test(name) || profileDirOf(Number(name)) !== dir) continue;
    for (const target of [-Number(name), Number(name)]) {
      try {
        process.kill(target, 'SIGKILL');
      } catch {
        // Not a group leader, or gone already.
      }
    }
  }
}

/** Removes a profile directory (a browser of ours that was killed, or whose owner died). */
export function removeProfile(dir: string): void {
  try {
    rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
  } catch {
    // Held by something else: the next sweep tries again.
  }
}

/** Removes the profile directories in `folder` (default: the temp folder) whose owner died. What it removed. */
export function sweepProfiles(folder = tmpdir()): string[] {
  let names: string[];
  try {
    names = readdirSync(folder);
  } catch {
    return [];
  }
  const removed: string[] = [];
  for (const name of names) {
    if (!name.startsWith(PREFIX)) continue;
    const dir = join(folder, name);
    if (!ownerGone(dir)) continue;
    killBrowsersIn(dir);
    removeProfile(dir);
    removed.push(dir);
  }
  return removed;
}
