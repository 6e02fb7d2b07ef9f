import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import Module, { createRequire } from 'node:module';
import { homedir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { Script } from 'node:vm';
import { threadId } from 'node:worker_threads';

// Runs a CommonJS bundle from V8's compiled code of an earlier start instead of compiling it again (what Node 22's
// module.enableCompileCache() does; the extension host and our Node 20 have no such thing). Parsing and
// compiling the 3.5 MB CLI and worker bundles was a third of their start-up: with the cache, a crawl's first
// request goes out ~0.1 s sooner (bench, interleaved A/B). dist/cli.js, dist/worker.js and dist/analysis.js are
// stubs calling runCached() on their *.bundle.js (see scripts/bundle-options.mjs).
//
// The cache is a user's own: V8's data is code, so a file someone else could write would run as this user. It
// lives in the user's cache folder, and a file not owned by this user is ignored. A bundle's cache is keyed by
// the file's identity (size, mtime, inode) and by the runtime (Node, V8, architecture); V8 rejects data made under
// other flags itself, and a rejected or missing cache is simply made anew.

/** Where compiled code is kept, or null when caching is off (`CRAWL_STUDIO_CODE_CACHE=off`). */
function codeCacheDir(env: NodeJS.ProcessEnv = process.env): string | null {
  const setting = env.CRAWL_STUDIO_CODE_CACHE;
  if (setting === '0' || setting === 'off') return null;
  if (setting) return setting;
  const base =
    process.platform === 'win32'
      ? (env.LOCALAPPDATA ?? join(homedir(), 'AppData', 'Local'))
      : process.platform === 'darwin'
        ? join(homedir(), 'Library', 'Caches')
        : (env.XDG_CACHE_HOME ?? join(homedir(), '.cache'));
  return join(base, 'crawl-studio', 'code-cache');
}

/** How long a bundle runs before its cache is written: long enough that its start-up code is compiled, and in it. */
const WRITE_AFTER_MS = 2_000;

export type CacheOutcome = 'off' | 'made' | 'used' | 'rejected';

/**
 * Runs `bundle` as the module `entry` (the stub that calls this): the bundle gets the stub's `module` and `exports`,
 * so `require.main === module` holds, and a `require` that resolves from the bundle's own folder.
 *
 * `v8Flags` are the program's V8 flags, set here, before the cache is read. V8 rejects cached data made under other
 * flags, and the cache is written once the program has run a while: a flag the program set itself was in force
 * when the cache was made and not yet when the next start read it, so every start was a miss (the CLI's
 * `--liftoff-only` did that: +35 ms a start, and 1.7 MB written again each time).
 */
export function runCached(
  bundle: string,
  entry: NodeModule,
  v8Flags: readonly string[] = [],
  dir = codeCacheDir(),
): CacheOutcome {
  for (const flag of v8Flags) setFlagsFromString(flag);
  const source = readFileSync(bundle, 'utf8').replace(/^#!.*/, '');
  const prefix = runtimePrefix(bundle, v8Flags);
  const file = dir ? join(dir, cacheName(bundle, prefix)) : null;
  const cached = file ? readOwn(file) : undefined;
  const script = new Script(Module.wrap(source), { filename: bundle, cachedData: cached });
  const outcome: CacheOutcome = !file ? 'off' : !cached ? 'made' : script.cachedDataRejected ? 'rejected' : 'used';
  if (file && outcome !== 'used') scheduleWrite(script, dir!, file, prefix);
  const wrapper = script.runInThisContext() as (...args: unknown[]) => void;
  wrapper.call(entry.exports, entry.exports, createRequire(bundle), entry, bundle, dirname(bundle));
  return outcome;
}

/**
 * `<bundle>-<runtime>-<file>.v8`: one name per build of a bundle and per runtime that runs it, flags included: one
 * program started under two sets of flags (the CLI's `worker` command and its others) keeps a cache for each,
 * instead of each start rejecting, and replacing, the other's.
 */
function cacheName(bundle: string, prefix: string): string {
  const s = statSync(bundle);
  return `${prefix}${hash([s.size, s.mtimeMs, s.ino].join(':'))}.v8`;
}

function runtimePrefix(bundle: string, v8Flags: readonly string[]): string {
  return `${basename(bundle, '.js')}-${hash([process.version, process.versions.v8, process.arch, ...v8Flags].join(':'))}-`;
}

function hash(text: string): string {
  return createHash('sha256').update(text).digest('hex').slice(0, 12);
}

function readOwn(file: string): Buffer | undefined {
  try {
    const uid = typeof process.getuid === 'function' ? process.getuid() : null;
    if (uid !== null && statSync(file).uid !== uid) return undefined;
    return readFileSync(file);
  } catch {
    return undefined;
  }
}

/** Once, after the bundle has started (or at exit, whichever comes first); a cache that cannot be written is no error. */
function scheduleWrite(script: Script, dir: string, file: string, prefix: string): void {
  let done = false;
  const write = () => {
    if (done) return;
    done = true;
    try {
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      // Through a temporary name: processes starting at the same time never read half a file.
      const tmp = `${file}.${process.pid}-${threadId}.tmp`;
      writeFileSync(tmp, script.createCachedData(), { mode: 0o600 });
      renameSync(tmp, file);
      // The caches of earlier builds of this bundle under this runtime and flags are dead weight (a few MB each).
      for (const old of readdirSync(dir)) {
        if (old.startsWith(prefix) && old.endsWith('.v8') && join(dir, old) !== file)
          rmSync(join(dir, old), { force: true });
      }
    } catch {
      // A read-only or full disk: the next start compiles again.
    }
  };
  setTimeout(write, WRITE_AFTER_MS).unref();
  process.once('exit', write);
}
