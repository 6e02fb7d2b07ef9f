import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import Mocha from 'mocha';
import { LOG_TAG_ENV, tagConsole } from '../harness/consoleTag';

// The extension-host test entry point (`extensionTestsPath`), shared by both routes:
//  - @vscode/test-electron (desktop VS Code, where it can be downloaded), and
//  - code-server + headless Chromium (test/extension/harness), where the workbench's `codeAutomationExit`
//    reports 0 when run() resolves and 1 when it rejects.
// esbuild compiles every test/**/*.test.ts to its own file next to this one (out/test/extension/suite/), so the
// suite finds its tests by listing this folder. Static imports would run the test files' top-level describe()
// before mocha has set up its globals.
//
// Env (set through the harness's `env` option or test-electron's `extensionTestsEnv`):
//   CRAWL_STUDIO_TEST_GREP     only tests whose full title matches this pattern
//   CRAWL_STUDIO_TEST_FILES    only the test files whose name matches this pattern (e.g. `stopStart`): the others
//                              are not even loaded
//   CRAWL_STUDIO_TEST_TIMEOUT  per-test timeout in ms (default 60000)

function testFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...testFiles(p));
    else if (name.endsWith('.test.js')) out.push(p);
  }
  return out;
}

export async function run(): Promise<void> {
  // Stack traces in failures point at test/**/*.ts (the test bundles carry inline source maps).
  process.setSourceMapsEnabled(true);
  const mocha = new Mocha({
    ui: 'bdd',
    reporter: 'spec',
    color: false,
    timeout: Number(process.env.CRAWL_STUDIO_TEST_TIMEOUT ?? 60_000),
  });
  const grep = process.env.CRAWL_STUDIO_TEST_GREP;
  if (grep) mocha.grep(grep);
  const only = process.env.CRAWL_STUDIO_TEST_FILES ? new RegExp(process.env.CRAWL_STUDIO_TEST_FILES) : null;
  const files = testFiles(__dirname).filter((f) => !only || only.test(relative(__dirname, f)));
  if (files.length === 0) throw new Error(`no *.test.js files next to ${__filename}: run \`node esbuild.mjs\` first`);
  for (const f of files) mocha.addFile(f);
  // On the code-server route, tag the console so the harness can tell test output from workbench logs.
  // Mocha's reporters keep their own reference to console.log: point it at the (tagged) console meanwhile.
  const restoreConsole = tagConsole(process.env[LOG_TAG_ENV]);
  const reporterLog = Mocha.reporters.Base.consoleLog;
  Mocha.reporters.Base.consoleLog = (...args: unknown[]) => console.log(...args);
  try {
    await runMocha(mocha, files);
  } finally {
    Mocha.reporters.Base.consoleLog = reporterLog;
    restoreConsole();
  }
}

function runMocha(mocha: Mocha, files: string[]): Promise<void> {
  console.log(`[suite] ${files.length} test file(s): ${files.map((f) => relative(__dirname, f)).join(', ')}`);

  return new Promise<void>((resolve, reject) => {
    try {
      const failed: string[] = [];
      const runner = mocha.run((failures) => {
        // scripts/test.mjs names these again in the suite's closing block.
        for (const line of failed) console.log(`extension FAILED: ${line}`);
        const { passes = 0, pending = 0 } = runner.stats ?? {};
        // A plain closing line that CI can read, whichever route ran the suite.
        console.log(`extension: ${passes} passed, ${failures} failed${pending ? `, ${pending} skipped` : ''}`);
        if (failures > 0) reject(new Error(`${failures} extension test(s) failed`));
        else if (passes === 0) reject(new Error('no extension test ran'));
        else resolve();
      });
      runner.on('fail', (test, err: unknown) => {
        const message = (String((err as Error)?.message ?? err).split('\n')[0] ?? '').slice(0, 300);
        failed.push(`${test.fullTitle()}: ${message}`);
      });
    } catch (err) {
      reject(err instanceof Error ? err : new Error(String(err)));
    }
  });
}
