import { spawn, type ChildProcess } from 'node:child_process';
import * as vscode from 'vscode';
import type { RedisConnection } from './redisConnection';
import { TASK_GLOB } from './taskFiles';

// `crawl-studio validate / run / test` as VS Code tasks (tasks.json, Terminal > Run Task), with the $crawl-studio
// problem matcher putting their `file:line:column: severity: message` lines in the Problems panel. The CLI is the
// one bundled in the extension (dist/cli.js; the .vsix puts no `crawl-studio` on PATH), run by the Node that runs
// the extension host. `run` uses the extension's Redis (the managed server, or crawlStudio.redisUrl), passed by
// environment, never on the command line.

export const TASK_TYPE = 'crawl-studio';
export const COMMANDS = ['validate', 'run', 'test'] as const;
export type CliCommand = (typeof COMMANDS)[number];

export interface CrawlTaskDefinition extends vscode.TaskDefinition {
  readonly type: typeof TASK_TYPE;
  readonly command: CliCommand;
  /** The task file, relative to the workspace folder (or absolute). */
  readonly file: string;
  /** More arguments for the command (e.g. ["--workers", "2"]). */
  readonly args?: readonly string[];
}

function isDefinition(d: vscode.TaskDefinition): d is CrawlTaskDefinition {
  return d.type === TASK_TYPE && COMMANDS.includes(d.command as CliCommand) && typeof d.file === 'string' && (d.args === undefined || (Array.isArray(d.args) && d.args.every((a) => typeof a === 'string')));
}

export class CrawlTaskProvider implements vscode.TaskProvider {
  constructor(
    private readonly context: vscode.ExtensionContext,
    private readonly connection: RedisConnection,
  ) {}

  async provideTasks(): Promise<vscode.Task[]> {
    const files = await vscode.workspace.findFiles(TASK_GLOB, '**/node_modules/**', 200);
    const out: vscode.Task[] = [];
    for (const uri of files.sort((a, b) => a.fsPath.localeCompare(b.fsPath))) {
      const folder = vscode.workspace.getWorkspaceFolder(uri);
      if (!folder) continue;
      const file = vscode.workspace.asRelativePath(uri, false);
      for (const command of COMMANDS) out.push(this.task({ type: TASK_TYPE, command, file }, folder));
    }
    return out;
  }

  resolveTask(task: vscode.Task): vscode.Task | undefined {
    if (!isDefinition(task.definition)) return undefined;
    const folder = typeof task.scope === 'object' ? task.scope : vscode.workspace.workspaceFolders?.[0];
    return folder ? this.task(task.definition, folder) : undefined;
  }

  private task(def: CrawlTaskDefinition, folder: vscode.WorkspaceFolder): vscode.Task {
    const t = new vscode.Task(def, folder, `${def.command} ${def.file}`, TASK_TYPE, new vscode.CustomExecution(async () => this.terminal(def, folder)), '$crawl-studio');
    t.group = def.command === 'test' ? vscode.TaskGroup.Test : def.command === 'validate' ? vscode.TaskGroup.Build : undefined;
    t.detail = { validate: 'Check the task file: its errors go to the Problems panel', run: 'Run the crawl on the extension\'s Redis', test: 'Check the fixtures saved for the task file' }[def.command];
    return t;
  }

  private terminal(def: CrawlTaskDefinition, folder: vscode.WorkspaceFolder): vscode.Pseudoterminal {
    return new CliTerminal(this.context.asAbsolutePath('dist/cli.js'), [def.command, def.file, ...(def.args ?? [])], folder.uri.fsPath, async (): Promise<Record<string, string>> => {
      if (def.command !== 'run') return {};
      await this.connection.get();
      return this.connection.workerUrl ? { CRAWL_STUDIO_REDIS: this.connection.workerUrl } : {};
    });
  }
}

/** How long the terminal is left open after the CLI's last output (its data is buffered a few ms). */
const CLOSE_AFTER_OUTPUT_MS = 250;

/** The CLI in a task's terminal: its output as it comes, Ctrl+C as SIGINT (the CLI stops gracefully), its exit code. */
class CliTerminal implements vscode.Pseudoterminal {
  private readonly written = new vscode.EventEmitter<string>();
  private readonly closed = new vscode.EventEmitter<number>();
  readonly onDidWrite = this.written.event;
  readonly onDidClose = this.closed.event;
  private child: ChildProcess | null = null;

  constructor(
    private readonly cli: string,
    private readonly args: readonly string[],
    private readonly cwd: string,
    private readonly env: () => Promise<Record<string, string>>,
  ) {}

  open(): void {
    void this.start();
  }

  private async start(): Promise<void> {
    let env: Record<string, string>;
    try {
      env = await this.env();
    } catch (err) {
      this.write(`Crawl Studio: no Redis to run on: ${err instanceof Error ? err.message : String(err)}\n`);
      this.closed.fire(1);
      return;
    }
    this.write(`> crawl-studio ${this.args.join(' ')}\n`);
    // The extension host's own Node; in desktop VS Code that is Electron, which runs as Node with this variable.
    const child = spawn(process.execPath, [this.cli, ...this.args], { cwd: this.cwd, env: { ...process.env, ...env, ELECTRON_RUN_AS_NODE: '1' }, stdio: ['ignore', 'pipe', 'pipe'] });
    this.child = child;
    child.stdout?.on('data', (b: Buffer) => this.write(b.toString()));
    child.stderr?.on('data', (b: Buffer) => this.write(b.toString()));
    child.on('error', (err) => {
      this.write(`Crawl Studio: could not start the CLI: ${err.message}\n`);
      this.closed.fire(1);
    });
    child.on('close', (code, signal) => {
      this.child = null;
      // The terminal hands its last lines to the problem matcher after a short buffer, and drops them when the
      // task closes first (microsoft/vscode#92868): the errors printed last never reached the Problems panel.
      setTimeout(() => this.closed.fire(code ?? (signal ? 130 : 1)), CLOSE_AFTER_OUTPUT_MS);
    });
  }

  private write(text: string): void {
    this.written.fire(text.replace(/\r?\n/g, '\r\n'));
  }

  handleInput(data: string): void {
    if (data === '\x03') this.child?.kill('SIGINT');
  }

  close(): void {
    this.child?.kill('SIGINT');
  }
}

export function registerTaskProvider(context: vscode.ExtensionContext, connection: RedisConnection): void {
  context.subscriptions.push(vscode.tasks.registerTaskProvider(TASK_TYPE, new CrawlTaskProvider(context, connection)));
}
