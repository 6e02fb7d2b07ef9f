import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { freePort } from '../../support/services';
import { track, untrack } from './cleanup';

/** The version scripts/code-server/install.sh installs. */
export const CODE_SERVER_VERSION = '4.103.2';

/** The repository root: the nearest folder above this file whose package.json is crawl-studio's. */
export function repoRoot(): string {
  let dir = __dirname;
  for (;;) {
    const pkg = join(dir, 'package.json');
    if (existsSync(pkg)) {
      try {
        if ((JSON.parse(readFileSync(pkg, 'utf8')) as { name?: string }).name === 'crawl-studio') return dir;
      } catch {
        // not a readable manifest: keep looking
      }
    }
    const up = dirname(dir);
    if (up === dir) throw new Error(`no crawl-studio package.json above ${__dirname}`);
    dir = up;
  }
}

/**
 * The code-server launcher: $CODE_SERVER_BIN, else $CODE_SERVER_DIR/node_modules/.bin/code-server, else the
 * folder scripts/code-server/install.sh installs into (<repo>/.cache/code-server).
 */
export function codeServerBin(): string {
  if (process.env.CODE_SERVER_BIN) return process.env.CODE_SERVER_BIN;
  const dir = process.env.CODE_SERVER_DIR ?? join(repoRoot(), '.cache', 'code-server');
  return join(dir, 'node_modules', '.bin', 'code-server');
}

export interface CodeServerOptions {
  /** The folder the workbench opens. */
  readonly workspaceFolder: string;
  /** Extra environment for code-server, inherited by its extension host (e.g. REDIS_URL for the tests). */
  readonly env?: Readonly<Record<string, string>>;
  /** User settings (merged over the harness's quiet defaults), written to the user-data-dir. */
  readonly settings?: Readonly<Record<string, unknown>>;
  /** How long to wait for code-server to answer, in ms (default 60000). */
  readonly startTimeoutMs?: number;
  /** Receives code-server's output lines. */
  readonly log?: (line: string) => void;
  readonly bin?: string;
  /** .vsix files installed into the fresh extensions-dir before the server starts (what users install). */
  readonly installExtensions?: readonly string[];
}

export interface CodeServer {
  readonly url: string;
  readonly port: number;
  readonly pid: number;
  /** Temporary folder holding the user-data-dir, the extensions-dir and the config; removed by stop(). */
  readonly dir: string;
  /** Everything code-server printed so far. */
  output(): string;
  /** Kills code-server's whole process group (it forks file watchers and the extension host) and waits. */
  stop(): Promise<void>;
}

/** Settings that keep a test workbench quiet and deterministic. */
export const DEFAULT_SETTINGS: Readonly<Record<string, unknown>> = {
  'workbench.startupEditor': 'none',
  'workbench.tips.enabled': false,
  'workbench.enableExperiments': false,
  'telemetry.telemetryLevel': 'off',
  'update.mode': 'none',
  'extensions.autoCheckUpdates': false,
  'extensions.autoUpdate': false,
  'extensions.ignoreRecommendations': true,
  'security.workspace.trust.enabled': false,
  'git.enabled': false,
  'window.restoreWindows': 'none',
  // A remote extension host (code-server's) looks for ports to forward by scanning every process's sockets
  // (`ls -l /proc/[0-9]*/fd/[0-9]*`, `ps`) every few seconds, a scan that grows with the crawl's processes:
  // measured idle, it was half of an open workbench's CPU (5.0 CPU-s in 40 s without these two, 2.5-2.8 with).
  // Only the 'output' source turns it off; the tests forward no port.
  'remote.autoForwardPorts': false,
  'remote.autoForwardPortsSource': 'output',
};

/** Environment for code-server: ours, minus variables of an enclosing VS Code that would steer it elsewhere. */
function childEnv(dir: string, extra: Readonly<Record<string, string>> | undefined): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (k.startsWith('VSCODE_') || k === 'ELECTRON_RUN_AS_NODE') continue;
    env[k] = v;
  }
  // code-server keeps its own state (coder.json, heartbeat, config) under XDG dirs: keep it out of $HOME.
  env.XDG_DATA_HOME = join(dir, 'xdg-data');
  env.XDG_CONFIG_HOME = join(dir, 'xdg-config');
  return { ...env, ...extra };
}

function killGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // group already gone
  }
}

function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

/** Starts code-server on a free loopback port and resolves once it answers /healthz. */
export async function startCodeServer(opts: CodeServerOptions): Promise<CodeServer> {
  const bin = opts.bin ?? codeServerBin();
  if (!existsSync(bin)) {
    throw new Error(
      `code-server not found at ${bin}: run \`bash scripts/code-server/install.sh\` (or set CODE_SERVER_BIN)`,
    );
  }
  if (!existsSync(opts.workspaceFolder)) throw new Error(`workspace folder ${opts.workspaceFolder} does not exist`);
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'cs-code-server-'));
  const userDataDir = join(dir, 'user-data');
  const extensionsDir = join(dir, 'extensions');
  mkdirSync(join(userDataDir, 'User'), { recursive: true });
  mkdirSync(extensionsDir, { recursive: true });
  const settings = { ...DEFAULT_SETTINGS, ...opts.settings };
  writeFileSync(join(userDataDir, 'User', 'settings.json'), JSON.stringify(settings, null, 2));
  // Workspace Trust is off unless a caller turns it on in the settings (the untrusted-workspace suite): then the
  // folder opens in restricted mode, as a cloned repository does for a user.
  const trust = settings['security.workspace.trust.enabled'] === true;
  const configFile = join(dir, 'config.yaml');
  writeFileSync(configFile, 'auth: none\n');
  const launcher = realpathSync(bin);
  for (const vsix of opts.installExtensions ?? []) {
    const install = [
      '--config',
      configFile,
      '--extensions-dir',
      extensionsDir,
      '--user-data-dir',
      userDataDir,
      '--install-extension',
      vsix,
    ];
    const r = spawnSync(
      launcher.endsWith('.js') ? process.execPath : bin,
      launcher.endsWith('.js') ? [launcher, ...install] : install,
      {
        encoding: 'utf8',
        env: childEnv(dir, opts.env),
        timeout: 120_000,
      },
    );
    if (r.status !== 0)
      throw new Error(`code-server --install-extension ${vsix} failed (${r.status}):\n${r.stdout}\n${r.stderr}`);
  }

  const args = [
    '--config',
    configFile,
    '--auth',
    'none',
    '--bind-addr',
    `127.0.0.1:${port}`,
    '--disable-telemetry',
    '--disable-update-check',
    ...(trust ? [] : ['--disable-workspace-trust']),
    '--disable-getting-started-override',
    '--ignore-last-opened',
    '--extensions-dir',
    extensionsDir,
    '--user-data-dir',
    userDataDir,
    opts.workspaceFolder,
  ];
  // The npm package's launcher is a node script: run it with this node (code-server needs Node 20).
  const real = realpathSync(bin);
  const [cmd, cmdArgs] = real.endsWith('.js') ? [process.execPath, [real, ...args]] : [bin, args];
  // detached: its own process group, so stop() can kill it together with the processes it forks.
  const child = spawn(cmd, cmdArgs, {
    cwd: opts.workspaceFolder,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: childEnv(dir, opts.env),
  });
  const pid = child.pid;
  if (pid === undefined) {
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`cannot start ${cmd}`);
  }
  track(pid, dir);

  let output = '';
  let partial = '';
  const onData = (chunk: Buffer): void => {
    const text = chunk.toString('utf8');
    output += text;
    if (output.length > 2_000_000) output = output.slice(-1_000_000);
    partial += text;
    const lines = partial.split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) if (line.trim()) opts.log?.(line);
  };
  child.stdout?.on('data', onData);
  child.stderr?.on('data', onData);

  let stopped: Promise<void> | undefined;
  const server: CodeServer = {
    url: `http://127.0.0.1:${port}`,
    port,
    pid,
    dir,
    output: () => output,
    stop() {
      stopped ??= (async () => {
        killGroup(pid, 'SIGTERM');
        const gone = await Promise.race([
          exited(child).then(() => true),
          new Promise<boolean>((r) => setTimeout(() => r(false), 5000)),
        ]);
        // The group may outlive its leader (watchers, the extension host): make sure nothing is left.
        killGroup(pid, 'SIGKILL');
        if (!gone) await exited(child);
        untrack(pid);
        rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
      })();
      return stopped;
    },
  };

  const deadline = Date.now() + (opts.startTimeoutMs ?? 60_000);
  try {
    for (;;) {
      if (child.exitCode !== null || child.signalCode !== null) {
        throw new Error(`code-server exited (${child.exitCode ?? child.signalCode}) before answering:\n${output}`);
      }
      try {
        const res = await fetch(`${server.url}/healthz`, { signal: AbortSignal.timeout(2000) });
        if (res.ok) break;
      } catch {
        // not listening yet
      }
      if (Date.now() > deadline) throw new Error(`code-server did not answer on ${server.url} in time:\n${output}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  } catch (err) {
    await server.stop();
    throw err;
  }
  return server;
}
