// Fixes in dependencies that upstream does not have yet, applied to node_modules after every install
// (package.json "postinstall") and checked again by every build (esbuild.mjs, bench/build.mjs), so no bundle, test
// or package is made from an unpatched copy. Each fix names the exact text it replaces and fails loudly when a
// new version of the package no longer has it: the fix must then be reviewed, never silently skipped.
//
// node-sqlite3-wasm 0.8.x: crash recovery. Its VFS takes one `<db>.lock` directory for every lock level, and its
// xCheckReservedLock answers "reserved" whenever that directory exists, including when this very connection made
// it. SQLite asks that question, holding its own SHARED lock, to decide whether a left-over journal is hot; the
// answer "another process is writing" means the journal of a process killed mid-commit is never rolled back, and
// the half-written transaction stays in the file: rows out of order, "database disk image is malformed"
// (test/store/recovery.test.ts reproduces it). A connection that holds the directory holds the only lock there is,
// so nobody else can hold RESERVED: answer 0 then.
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const MARKER = '/*crawl-studio: own lock*/';

const FIXES = [
  {
    file: 'node_modules/node-sqlite3-wasm/dist/node-sqlite3-wasm.js',
    what: "node-sqlite3-wasm's xCheckReservedLock counts this connection's own lock (hot journals never roll back)",
    from: 'function _nodejsCheckReservedLock(fi,outResult){try{',
    to: `function _nodejsCheckReservedLock(fi,outResult){${MARKER}if(_isLocked(fi)){setValue(outResult,0,"i32");return SQLITE_OK}try{`,
  },
];

/** Applies every fix that is not applied yet; throws when a file no longer has the text a fix replaces. */
export function patchDependencies({ quiet = false } = {}) {
  for (const fix of FIXES) {
    const path = join(root, fix.file);
    const text = readFileSync(path, 'utf8');
    if (text.includes(fix.to)) continue;
    if (text.split(fix.from).length !== 2) {
      throw new Error(`patch-deps: ${fix.file} does not contain the code this fix replaces (${fix.what}); the package changed: review the fix in scripts/patch-deps.mjs`);
    }
    writeFileSync(path, text.replace(fix.from, fix.to));
    if (!quiet) console.log(`patch-deps: fixed ${fix.what}`);
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) patchDependencies();
