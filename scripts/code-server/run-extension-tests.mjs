#!/usr/bin/env node
// Runs the extension-host test suite (out/test/extension/suite/index.js) in a real VS Code and exits with its
// code: 0 all passed, 1 a test failed, 2 the run could not happen (nothing built, code-server or the browser
// did not start, timeout).
//
//   node esbuild.mjs && node scripts/code-server/run-extension-tests.mjs
//
// Default route: code-server from scripts/code-server/install.sh (run automatically when it is missing) opened
// in headless /usr/bin/chromium. With CRAWL_STUDIO_TEST_ELECTRON=1 the same suite runs in desktop VS Code via
// @vscode/test-electron, which downloads VS Code (CRAWL_STUDIO_VSCODE_VERSION, default "stable") and so needs
// a machine that can reach Microsoft's update servers.
//
// Env: CRAWL_STUDIO_TEST_GREP (only matching tests), CRAWL_STUDIO_TEST_FILES (only the suite files whose name
// matches, e.g. `CRAWL_STUDIO_TEST_FILES=stopStart CRAWL_STUDIO_SKIP_UNTRUSTED=1`), CRAWL_STUDIO_TEST_TIMEOUT (per test, ms),
// CRAWL_STUDIO_RUN_TIMEOUT (whole run, ms, default 300000), CRAWL_STUDIO_TEST_WORKSPACE (folder to open),
// CRAWL_STUDIO_SKIP_UNTRUSTED=1 (skip the second, untrusted-workspace suite; code-server route only),
// CRAWL_STUDIO_TEST_VERBOSE=1 (print every workbench and code-server log line, not only the extension host's).
// The extension host inherits this process's environment (e.g. REDIS_URL) on both routes.
import '../node22-guard.mjs';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const require = createRequire(import.meta.url);
const suite = join(repo, 'out', 'test', 'extension', 'suite', 'index.js');
const untrustedSuite = join(repo, 'out', 'test', 'extension', 'untrusted', 'index.js');
const harnessJs = join(repo, 'out', 'test', 'extension', 'harness', 'index.js');
const workspace = resolve(
  process.env.CRAWL_STUDIO_TEST_WORKSPACE ?? join(repo, 'test', 'extension', 'fixtures', 'workspace'),
);
// Tells the suite where it runs and what it opened (and proves the environment reaches the extension host).
const env = {
  CRAWL_STUDIO_TEST_HOST: process.env.CRAWL_STUDIO_TEST_ELECTRON === '1' ? 'electron' : 'code-server',
  CRAWL_STUDIO_TEST_WORKSPACE: workspace,
};

function fail(message) {
  console.error(`[extension tests] ${message}`);
  process.exit(2);
}

for (const f of [join(repo, 'dist', 'extension.js'), suite, untrustedSuite, harnessJs]) {
  if (!existsSync(f)) fail(`${f} is missing: run \`node esbuild.mjs\` first`);
}

const verbose = process.env.CRAWL_STUDIO_TEST_VERBOSE === '1';
const started = Date.now();
let code;
try {
  if (process.env.CRAWL_STUDIO_TEST_ELECTRON === '1') {
    const { runTests } = require('@vscode/test-electron');
    code = await runTests({
      version: process.env.CRAWL_STUDIO_VSCODE_VERSION ?? 'stable',
      extensionDevelopmentPath: repo,
      extensionTestsPath: suite,
      extensionTestsEnv: env,
      launchArgs: [
        workspace,
        '--disable-extensions',
        '--disable-workspace-trust',
        '--skip-welcome',
        '--skip-release-notes',
      ],
    }).catch((err) => {
      // runTests rejects with TestRunFailedError when the suite fails: that is a test failure, not a crash.
      if (err && typeof err.code === 'number') return err.code;
      if (err && /ENOTFOUND|ECONNREFUSED|ETIMEDOUT|EAI_AGAIN/.test(String(err.code ?? err.message))) {
        throw new Error(
          `${err.message}: @vscode/test-electron downloads VS Code; where that is blocked, unset CRAWL_STUDIO_TEST_ELECTRON to use code-server`,
          { cause: err },
        );
      }
      throw err;
    });
  } else {
    const harness = require(harnessJs);
    if (!existsSync(harness.codeServerBin())) {
      console.log(`[extension tests] code-server is not installed at ${harness.codeServerBin()}; installing`);
      const r = spawnSync('bash', [join(repo, 'scripts', 'code-server', 'install.sh')], { stdio: 'inherit' });
      if (r.status !== 0) fail('scripts/code-server/install.sh failed');
    }
    const runSuite = (extensionTestsPath, workspaceFolder, extra = {}) =>
      harness.runExtensionTests({
        workspaceFolder,
        extensionDevelopmentPath: repo,
        extensionTestsPath,
        env: { ...env, CRAWL_STUDIO_TEST_WORKSPACE: workspaceFolder },
        timeoutMs: Number(process.env.CRAWL_STUDIO_RUN_TIMEOUT ?? 300_000),
        onServerLog: verbose ? (line) => console.log(`[code-server] ${line}`) : undefined,
        onLog: verbose ? (type, text) => console.log(`[workbench ${type}] ${text}`) : undefined,
        // The extension host's console while the suite runs (mocha's report).
        onTestOutput: (type, text) => (type === 'error' ? console.error : console.log)(text),
        ...extra,
      });
    code = await runSuite(suite, workspace);
    // The second suite opens its own folder with Workspace Trust on, so the folder is in restricted mode.
    // CRAWL_STUDIO_TEST_GREP narrows both suites; one that names none of the untrusted tests skips that suite.
    const grep = process.env.CRAWL_STUDIO_TEST_GREP;
    if (!process.env.CRAWL_STUDIO_SKIP_UNTRUSTED && (!grep || /untrusted/i.test(grep))) {
      const untrustedCode = await runSuite(untrustedSuite, join(repo, 'test', 'extension', 'fixtures', 'untrusted'), {
        name: `untrusted-${new Date().toISOString().replace(/[:.]/g, '-')}`,
        settings: {
          'security.workspace.trust.enabled': true,
          'security.workspace.trust.startupPrompt': 'never',
          'security.workspace.trust.banner': 'never',
          'security.workspace.trust.emptyWindow': false,
        },
      });
      code = code || untrustedCode;
    }
  }
} catch (err) {
  fail(err instanceof Error ? (err.stack ?? err.message) : String(err));
}
console.log(`[extension tests] exit code ${code} after ${((Date.now() - started) / 1000).toFixed(1)} s`);
process.exit(code);
