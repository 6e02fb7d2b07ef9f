// Runs VS Code extension-host tests and UI tests in a real VS Code on machines that cannot download VS Code:
// code-server (VS Code 1.103.2 server + web workbench, installed from npm by scripts/code-server/install.sh)
// opened in headless Debian Chromium through playwright-core.
//
//   runExtensionTests({ workspaceFolder, extensionTestsPath })  -> the suite's exit code (0 passed, 1 failed)
//   openWorkbench({ workspaceFolder })                          -> a live workbench page for UI tests
//
// The extension host runs in code-server's Node process tree, so it inherits code-server's environment:
// `env` reaches the tests' process.env (e.g. REDIS_URL).
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { format } from 'node:util';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { repoRoot, startCodeServer, type CodeServer } from './codeServer';
import { LOG_TAG_ENV, untag } from './consoleTag';

export { CODE_SERVER_VERSION, DEFAULT_SETTINGS, codeServerBin, repoRoot, startCodeServer } from './codeServer';
export type { CodeServer, CodeServerOptions } from './codeServer';

/** Launch args that work as root, headless, in a closed network (see the CI notes). */
export const CHROMIUM_ARGS: readonly string[] = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];

export function chromiumPath(): string {
  return process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
}

/** <repo>/test-artifacts, or $CRAWL_STUDIO_ARTIFACTS. */
export function artifactsRoot(): string {
  return process.env.CRAWL_STUDIO_ARTIFACTS ?? join(repoRoot(), 'test-artifacts');
}

export interface WorkbenchOptions {
  /** The folder the workbench opens (absolute, or relative to the repo root). */
  readonly workspaceFolder: string;
  /** The extension under development; default the repo root (its built entry is dist/extension.js). null: none. */
  readonly extensionDevelopmentPath?: string | null;
  /** The compiled test entry exporting run() (a file or a folder with index.js). Omit for UI tests. */
  readonly extensionTestsPath?: string;
  /** Extra environment for code-server and so for the extension host and the tests it runs. */
  readonly env?: Readonly<Record<string, string>>;
  /** .vsix files installed before the workbench opens (combine with extensionDevelopmentPath: null). */
  readonly installExtensions?: readonly string[];
  /** User settings merged over DEFAULT_SETTINGS. */
  readonly settings?: Readonly<Record<string, unknown>>;
  /** Where screenshots and logs go (default test-artifacts/). */
  readonly artifactsDir?: string;
  readonly viewport?: { readonly width: number; readonly height: number };
  /** Receives the workbench's own log lines (codeAutomationLog). */
  readonly onLog?: (type: string, text: string) => void;
  /** Receives the extension host's console lines written while the suite's run() runs (mocha's report). */
  readonly onTestOutput?: (type: string, text: string) => void;
  /** Receives code-server's own output lines. */
  readonly onServerLog?: (line: string) => void;
}

export interface Workbench {
  readonly server: CodeServer;
  readonly browser: Browser;
  readonly context: BrowserContext;
  readonly page: Page;
  readonly url: string;
  /** Resolves with the code the workbench passes to codeAutomationExit (extension tests: 0 passed, 1 failed). */
  readonly exit: Promise<number>;
  /** Everything logged so far: code-server output, workbench log lines, page console and errors. */
  transcript(): string;
  /** A full-page screenshot at `path` (relative paths go under the artifacts folder); returns the path. */
  screenshot(path: string): Promise<string>;
  /** Writes `<name>.png` and `<name>.log` (the transcript) under the artifacts folder; returns the png path. */
  saveArtifacts(name: string): Promise<string>;
  /** Closes the browser and kills code-server's process group. Idempotent. */
  close(): Promise<void>;
}

function formatArgs(args: readonly unknown[]): string {
  const list = args.map((a) => {
    if (a === null || typeof a !== 'object') return a;
    try {
      return JSON.stringify(a);
    } catch {
      return String(a);
    }
  });
  return typeof list[0] === 'string' ? format(...(list as [string, ...unknown[]])) : list.map(String).join(' ');
}

function abs(p: string): string {
  return isAbsolute(p) ? p : resolve(repoRoot(), p);
}

/** The workbench URL that opens `folder` with the given launch payload (`vscode-remote://` URIs). */
export function workbenchUrl(
  server: CodeServer,
  folder: string,
  payload: ReadonlyArray<readonly [string, string]>,
): string {
  let url = `${server.url}/?folder=${encodeURIComponent(folder)}`;
  if (payload.length > 0) url += `&payload=${encodeURIComponent(JSON.stringify(payload))}`;
  return url;
}

/** A path on the code-server machine as the web workbench addresses it: plain paths are ignored. */
export function remoteUri(server: CodeServer, path: string): string {
  return `vscode-remote://127.0.0.1:${server.port}${path}`;
}

export async function openWorkbench(opts: WorkbenchOptions): Promise<Workbench> {
  const folder = abs(opts.workspaceFolder);
  const devPath = opts.extensionDevelopmentPath === null ? undefined : abs(opts.extensionDevelopmentPath ?? repoRoot());
  if (devPath !== undefined) {
    const manifest = join(devPath, 'package.json');
    if (!existsSync(manifest)) throw new Error(`no extension manifest at ${manifest}`);
    const main = (JSON.parse(readFileSync(manifest, 'utf8')) as { main?: string }).main;
    if (main && !existsSync(join(devPath, main))) {
      throw new Error(`the extension's entry ${join(devPath, main)} is missing: run \`node esbuild.mjs\` first`);
    }
  }
  const testsPath = opts.extensionTestsPath === undefined ? undefined : abs(opts.extensionTestsPath);
  if (testsPath !== undefined && !existsSync(testsPath)) {
    throw new Error(`extension tests entry ${testsPath} is missing: run \`node esbuild.mjs\` first`);
  }
  const artifactsDir = opts.artifactsDir ?? artifactsRoot();

  let transcript = '';
  const note = (line: string): void => {
    transcript += `${new Date().toISOString()} ${line}\n`;
  };

  const tag = `[cs-test-${randomBytes(6).toString('hex')}]`;
  const server = await startCodeServer({
    workspaceFolder: folder,
    env: { [LOG_TAG_ENV]: tag, ...opts.env },
    ...(opts.settings ? { settings: opts.settings } : {}),
    ...(opts.installExtensions ? { installExtensions: opts.installExtensions } : {}),
    log: (line) => {
      note(`[code-server] ${line}`);
      opts.onServerLog?.(line);
    },
  });

  let browser: Browser | undefined;
  try {
    browser = await chromium.launch({ executablePath: chromiumPath(), headless: true, args: [...CHROMIUM_ARGS] });
    const context = await browser.newContext({ viewport: opts.viewport ?? { width: 1400, height: 900 } });
    const page = await context.newPage();

    let resolveExit!: (code: number) => void;
    const exit = new Promise<number>((r) => (resolveExit = r));
    // Both hooks must exist before the workbench loads: it looks for them at startup.
    await page.exposeFunction('codeAutomationLog', (type: string, args: unknown) => {
      const list = Array.isArray(args) ? (args as unknown[]) : [args];
      const output = untag(tag, list);
      if (output !== undefined) {
        note(`[test ${type}] ${output}`);
        opts.onTestOutput?.(type, output);
        return;
      }
      const text = formatArgs(list);
      note(`[workbench ${type}] ${text}`);
      opts.onLog?.(type, text);
    });
    await page.exposeFunction(
      'codeAutomationExit',
      (code: number, logs?: Array<{ relativePath: string; contents: string }>) => {
        note(`[workbench] codeAutomationExit(${code})`);
        if (code !== 0 && Array.isArray(logs)) {
          for (const log of logs) note(`[workbench log file ${log.relativePath}]\n${log.contents}`);
        }
        resolveExit(typeof code === 'number' ? code : 1);
      },
    );
    page.on('console', (msg) => note(`[console ${msg.type()}] ${msg.text()}`));
    page.on('pageerror', (err) => note(`[pageerror] ${err.stack ?? err.message}`));

    const payload: Array<[string, string]> = [];
    if (devPath !== undefined) payload.push(['extensionDevelopmentPath', remoteUri(server, devPath)]);
    if (testsPath !== undefined) payload.push(['extensionTestsPath', remoteUri(server, testsPath)]);
    const url = workbenchUrl(server, folder, payload);
    note(`[harness] open ${url}`);
    await page.goto(url, { waitUntil: 'domcontentloaded' });

    const toPath = (p: string): string => (isAbsolute(p) ? p : join(artifactsDir, p));
    let closed: Promise<void> | undefined;
    const b = browser;
    const workbench: Workbench = {
      server,
      browser: b,
      context,
      page,
      url,
      exit,
      transcript: () => transcript,
      async screenshot(p) {
        const file = toPath(p);
        mkdirSync(dirname(file), { recursive: true });
        await page.screenshot({ path: file, fullPage: true, timeout: 15_000 });
        return file;
      },
      async saveArtifacts(name) {
        const png = toPath(`${name}.png`);
        mkdirSync(dirname(png), { recursive: true });
        writeFileSync(toPath(`${name}.log`), workbench.transcript());
        try {
          await workbench.screenshot(png);
        } catch (err) {
          note(`[harness] screenshot failed: ${(err as Error).message}`);
          writeFileSync(toPath(`${name}.log`), workbench.transcript());
        }
        return png;
      },
      close() {
        closed ??= (async () => {
          await b.close().catch(() => undefined);
          await server.stop();
        })();
        return closed;
      },
    };
    return workbench;
  } catch (err) {
    await browser?.close().catch(() => undefined);
    await server.stop();
    throw err;
  }
}

export interface ExtensionTestOptions extends Omit<WorkbenchOptions, 'extensionTestsPath'> {
  /** The compiled suite entry, e.g. out/test/extension/suite/index.js. */
  readonly extensionTestsPath: string;
  /** Whole-run limit in ms (default 300000). */
  readonly timeoutMs?: number;
  /** Artifact name for a failed run (default `extension-tests-<time>`), under <artifacts>/extension/. */
  readonly name?: string;
}

/**
 * Runs the extension-host suite at `extensionTestsPath` in code-server and resolves with its exit code:
 * 0 when run() resolved, 1 when it rejected. On failure or timeout a screenshot and a log go to
 * test-artifacts/extension/. Rejects on infrastructure failure (code-server or the browser did not start,
 * or the run timed out). Every process it started is gone when it settles.
 */
export async function runExtensionTests(opts: ExtensionTestOptions): Promise<number> {
  const timeoutMs = opts.timeoutMs ?? 300_000;
  const name = join('extension', opts.name ?? `extension-tests-${new Date().toISOString().replace(/[:.]/g, '-')}`);
  const wb = await openWorkbench(opts);
  let timer: NodeJS.Timeout | undefined;
  try {
    const code = await Promise.race([
      wb.exit,
      new Promise<'timeout'>((r) => (timer = setTimeout(() => r('timeout'), timeoutMs))),
    ]);
    if (code === 'timeout') {
      const png = await wb.saveArtifacts(name);
      throw new Error(
        `extension tests did not finish in ${timeoutMs} ms; screenshot ${png}, log ${png.replace(/\.png$/, '.log')}`,
      );
    }
    if (code !== 0) {
      const png = await wb.saveArtifacts(name);
      console.error(
        `[harness] extension tests exited ${code}; screenshot ${png}, log ${png.replace(/\.png$/, '.log')}`,
      );
    }
    return code;
  } finally {
    clearTimeout(timer);
    await wb.close();
  }
}

/** The default fixture workspace. */
export function fixtureWorkspace(): string {
  return join(repoRoot(), 'test', 'extension', 'fixtures', 'workspace');
}
