import * as vscode from 'vscode';
import type { CrawlManager } from './crawls/crawlManager';
import { engine } from './lazy';
import type { TaskDiagnostic } from '../core/task/diagnostics';
import { TASK_GLOB } from './taskFiles';

// `crawl-studio validate / run / test` as VS Code tasks (tasks.json, Terminal > Run Task). They run in the extension
// host through the code the CLI runs (the parser and its diagnostic format, the fixture comparison and its report,
// the launcher behind Start Crawl), so a `run` task is a crawl of this window: the Queue Explorer, the status bar
// and Stop Crawl follow it, on the extension's Redis. The .vsix ships no `crawl-studio` program.
//
// Their problems go to the Problems panel directly (source crawl-studio), not through a problem matcher reading
// the terminal: the matcher misses a pseudoterminal's output now and then (microsoft/vscode#92868, #194501), and
// these tasks have the diagnostics in hand. The $crawl-studio problem matcher (package.json) is for tasks.json
// tasks that run the CLI itself (`crawl-studio validate x.crawl.yaml` from npm, in CI images).

const TASK_TYPE = 'crawl-studio';
export const COMMANDS = ['validate', 'run', 'test'] as const;
export type CliCommand = (typeof COMMANDS)[number];

export interface CrawlTaskDefinition extends vscode.TaskDefinition {
  readonly type: typeof TASK_TYPE;
  readonly command: CliCommand;
  /** The task file, relative to the workspace folder (or absolute). */
  readonly file: string;
}

function isDefinition(d: vscode.TaskDefinition): d is CrawlTaskDefinition {
  return d.type === TASK_TYPE && COMMANDS.includes(d.command as CliCommand) && typeof d.file === 'string';
}

class CrawlTaskProvider implements vscode.TaskProvider {
  constructor(
    private readonly crawls: CrawlManager,
    /** The tasks' problems, per task file: each validate, test or run replaces its file's. */
    private readonly problems: vscode.DiagnosticCollection,
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
    const uri = /^(\/|[A-Za-z]:[\\/])/.test(def.file)
      ? vscode.Uri.file(def.file)
      : vscode.Uri.joinPath(folder.uri, def.file);
    const work = (out: Output, cancelled: vscode.CancellationToken) => this[def.command](uri, def.file, out, cancelled);
    const t = new vscode.Task(
      def,
      folder,
      `${def.command} ${def.file}`,
      TASK_TYPE,
      new vscode.CustomExecution(() => Promise.resolve(new TaskTerminal(work))),
      [],
    );
    t.group =
      def.command === 'test' ? vscode.TaskGroup.Test : def.command === 'validate' ? vscode.TaskGroup.Build : undefined;
    t.detail = {
      validate: 'Check the task file: its errors go to the Problems panel',
      run: "Crawl it on the extension's Redis, as Start Crawl does",
      test: 'Check the fixtures saved for the task file',
    }[def.command];
    return t;
  }

  /** The text of the task file: the editor's, unsaved edits included, else the file's. */
  private async text(uri: vscode.Uri): Promise<string> {
    const doc = vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri.toString());
    return doc ? doc.getText() : new TextDecoder().decode(await vscode.workspace.fs.readFile(uri));
  }

  /**
   * As `crawl-studio validate`: each problem on a line of the CLI's format, then a summary; 1 when it has errors.
   * One write: the problem matcher misses lines that reach the terminal in separate writes now and then
   * (microsoft/vscode#194501).
   */
  private async validate(uri: vscode.Uri, shown: string, out: Output): Promise<number> {
    const { parseTask, formatDiagnostic } = await engine();
    const { diagnostics } = parseTask(await this.text(uri), shown);
    this.publish(uri, diagnostics);
    const n = diagnostics.filter((d) => d.severity === 'error').length;
    out(
      [
        ...diagnostics.map(formatDiagnostic),
        n === 0 ? `${shown}: ok` : `${shown}: ${n} error${n === 1 ? '' : 's'}`,
      ].join('\n'),
    );
    return n > 0 ? 1 : 0;
  }

  /** The task file's problems as the task found them (the editor's own checks publish theirs as you type). */
  private publish(uri: vscode.Uri, diagnostics: readonly TaskDiagnostic[]): void {
    // An open task file has the editor's live problems (designer/editorFeatures.ts), the same messages at the same
    // places: publishing them here too listed each twice in Problems (issue 32, item 7).
    if (isOpen(uri)) return this.problems.delete(uri);
    this.problems.set(
      uri,
      diagnostics.map((d) => {
        const range = new vscode.Range(d.line - 1, d.column - 1, d.endLine - 1, Math.max(d.endColumn - 1, d.column));
        const diag = new vscode.Diagnostic(
          range,
          d.path ? `${d.path}: ${d.message}` : d.message,
          d.severity === 'error' ? vscode.DiagnosticSeverity.Error : vscode.DiagnosticSeverity.Warning,
        );
        diag.source = TASK_TYPE;
        return diag;
      }),
    );
  }

  /** As `crawl-studio test`: the fixture report; 1 on a change or no fixtures. */
  private async test(uri: vscode.Uri, shown: string, out: Output): Promise<number> {
    const { parseTask, formatDiagnostic, testTask, formatTestReport } = await engine();
    const { task, diagnostics } = parseTask(await this.text(uri), shown);
    this.publish(uri, diagnostics);
    if (!task) {
      out(diagnostics.map(formatDiagnostic).join('\n'));
      return 1;
    }
    const report = await testTask(uri.fsPath, task);
    out(formatTestReport(report));
    return report.ok ? 0 : 1;
  }

  /** As Start Crawl (the launcher `crawl-studio run` uses): until the crawl ends; Ctrl+C stops it, resumably. */
  private async run(uri: vscode.Uri, shown: string, out: Output, cancelled: vscode.CancellationToken): Promise<number> {
    if ((await this.validate(uri, shown, () => undefined)) !== 0) return this.validate(uri, shown, out);
    const rc = await this.crawls.start(await vscode.workspace.openTextDocument(uri));
    out(
      `Crawl '${rc.task.name}' running: the Queue Explorer and the status bar follow it; Ctrl+C stops it (it resumes where it was).`,
    );
    const sub = cancelled.onCancellationRequested(() => {
      // As Ctrl-C of `crawl-studio run`: an interruption, the run kept to resume (Stop Crawl ends it).
      out('Stopping: workers finish their pages…');
      void this.crawls.interrupt(rc.task.name);
    });
    const finished = this.crawls.onDidFinish((e) => e.task === rc.task.name && out(e.message));
    try {
      await rc.done;
      return 0;
    } catch (err) {
      out(`error: ${err instanceof Error ? err.message : String(err)}`);
      return 1;
    } finally {
      sub.dispose();
      finished.dispose();
    }
  }
}

type Output = (line: string) => void;

/** How long the terminal stays open after the last output: it hands lines to the problem matcher after a short buffer. */
const CLOSE_AFTER_OUTPUT_MS = 250;

/** A task's terminal: the work's lines as they come, Ctrl+C (or closing it) as a cancellation, its exit code. */
class TaskTerminal implements vscode.Pseudoterminal {
  private readonly written = new vscode.EventEmitter<string>();
  private readonly closed = new vscode.EventEmitter<number>();
  readonly onDidWrite = this.written.event;
  readonly onDidClose = this.closed.event;
  private readonly cancel = new vscode.CancellationTokenSource();

  constructor(private readonly work: (out: Output, cancelled: vscode.CancellationToken) => Promise<number>) {}

  open(): void {
    const out: Output = (line) => this.written.fire(`${line.replace(/\r?\n/g, '\r\n')}\r\n`);
    void this.work(out, this.cancel.token)
      .catch((err: unknown) => {
        out(`error: ${err instanceof Error ? err.message : String(err)}`);
        return 1;
      })
      // A task that closes right after its last write loses those lines for the problem matcher
      // (microsoft/vscode#92868): the errors printed last never reached the Problems panel.
      .then((code) => setTimeout(() => this.closed.fire(code), CLOSE_AFTER_OUTPUT_MS));
  }

  handleInput(data: string): void {
    if (data === '\x03') this.cancel.cancel();
  }

  close(): void {
    this.cancel.cancel();
  }
}

function isOpen(uri: vscode.Uri): boolean {
  return vscode.workspace.textDocuments.some((d) => d.uri.toString() === uri.toString() && !d.isClosed);
}

export function registerTaskProvider(context: vscode.ExtensionContext, crawls: CrawlManager): void {
  const problems = vscode.languages.createDiagnosticCollection(TASK_TYPE);
  context.subscriptions.push(
    problems,
    vscode.tasks.registerTaskProvider(TASK_TYPE, new CrawlTaskProvider(crawls, problems)),
    // Opened, the file's problems are the editor's own from then on: the task's earlier copy goes.
    vscode.workspace.onDidOpenTextDocument((doc) => problems.delete(doc.uri)),
  );
}
