import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import type * as Playwright from 'playwright-core';

// playwright-core is loaded on a task's first rendered page, never before: a worker without browser rules pays
// nothing for it. The shipped bundles carry it as dist/playwright-core (built by esbuild.mjs, with the package.json
// it reads next to it); tests and the repository's own runs load it from node_modules.

let loaded: Promise<typeof Playwright> | null = null;

export function loadPlaywright(): Promise<typeof Playwright> {
  // A require resolved from this file's folder, not import(): the programs run their bundle from V8's code cache
  // (codeCache.ts) in a vm.Script, where a dynamic import() has no loader and fails (seen in bench/.build, which
  // ships no playwright-core). A failure to load is the promise's rejection, as the first render's error.
  loaded ??= new Promise((resolve) => {
    const shipped = join(__dirname, 'playwright-core', 'lib', 'index.js');
    const load = createRequire(__filename);
    resolve(load(existsSync(shipped) ? shipped : 'playwright-core') as typeof Playwright);
  });
  return loaded;
}
