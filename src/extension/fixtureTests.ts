import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import * as vscode from 'vscode';
import type { FieldChange, FixtureResult } from '../core/designer/fixtures';
import type { fieldSpan } from '../core/task/outline';
import { engine } from './lazy';
import { TASK_GLOB } from './taskFiles';

// Fixtures in the Testing view (issue 23, VS Code conventions): each task file with saved fixtures is a test
// suite, each fixture a test, run from the Testing view or the gutter of the task file, and a changed field shown
// as a diff (expected, the saved extraction; actual, what the rule extracts now). The same comparison as "Test Task"
// and `crawl-studio test` (workspace/fixtureStore.ts). The controller is created at activation; fixtures are read
// when the Testing view asks for them, and the extraction code loads with the first run.

const CONTROLLER_ID = 'crawlStudio.fixtures';

/** A test's outcome as the last run reported it, for tests (the Testing view's results are not readable by API). */
export interface FixtureTestOutcome {
  readonly id: string;
  readonly state: 'passed' | 'failed' | 'errored' | 'skipped';
  readonly message: string | null;
  readonly expected?: string;
  readonly actual?: string;
  /** Where the message points: the task file's line (0-based) of the first changed field. */
  readonly line?: number;
}

export class FixtureTests implements vscode.Disposable {
  readonly controller = vscode.tests.createTestController(CONTROLLER_ID, 'Crawl Studio fixtures');
  private readonly disposables: vscode.Disposable[] = [];
  /** Outcomes of the last run, by test id. */
  readonly lastRun = new Map<string, FixtureTestOutcome>();
  private readonly ran = new vscode.EventEmitter<void>();
  readonly onDidRun = this.ran.event;

  constructor() {
    this.controller.resolveHandler = async (item) => {
      if (!item) await this.discover();
    };
    this.controller.refreshHandler = () => this.discover();
    this.controller.createRunProfile(
      'Run Fixtures',
      vscode.TestRunProfileKind.Run,
      (request, token) => this.run(request, token),
      true,
    );
    const watcher = vscode.workspace.createFileSystemWatcher('**/{*.crawl.yaml,*.crawl.yml,.crawl/fixtures/**/*.json}');
    let pending: NodeJS.Timeout | null = null;
    const again = () => {
      // Only once someone looked: the Testing view asks first.
      if (this.controller.items.size === 0) return;
      if (pending) clearTimeout(pending);
      pending = setTimeout(() => void this.discover(), 300);
    };
    this.disposables.push(
      this.controller,
      this.ran,
      watcher,
      watcher.onDidCreate(again),
      watcher.onDidChange(again),
      watcher.onDidDelete(again),
    );
  }

  /** Reads every task file's fixtures: a suite per task file that has some, a test per fixture. */
  async discover(): Promise<void> {
    const { parseTask, fixtureDir } = await engine();
    const uris = await vscode.workspace.findFiles(TASK_GLOB, '**/node_modules/**', 200);
    const suites: vscode.TestItem[] = [];
    for (const uri of uris.sort((a, b) => a.fsPath.localeCompare(b.fsPath))) {
      if (uri.scheme !== 'file') continue;
      const name = parseTask(new TextDecoder().decode(await vscode.workspace.fs.readFile(uri)), uri.fsPath).task?.name;
      if (!name) continue;
      const dir = fixtureDir(uri.fsPath, name);
      const files = (await readdir(dir).catch(() => [] as string[])).filter((f) => f.endsWith('.json')).sort();
      if (files.length === 0) continue;
      const suite = this.controller.createTestItem(
        uri.toString(),
        `${name} (${vscode.workspace.asRelativePath(uri)})`,
        uri,
      );
      suite.range = new vscode.Range(0, 0, 0, 0);
      suite.children.replace(
        files.map((f) => {
          const stem = f.slice(0, -'.json'.length);
          const test = this.controller.createTestItem(`${uri.toString()}#${stem}`, stem, vscode.Uri.file(join(dir, f)));
          return test;
        }),
      );
      suites.push(suite);
    }
    this.controller.items.replace(suites);
  }

  private async run(request: vscode.TestRunRequest, token: vscode.CancellationToken): Promise<void> {
    const run = this.controller.createTestRun(request);
    this.lastRun.clear();
    try {
      // The requested tests by suite: a suite runs its task's fixtures once.
      const bySuite = new Map<vscode.TestItem, Set<vscode.TestItem>>();
      const wanted = request.include ?? [...iterate(this.controller.items)];
      for (const item of wanted) {
        const suite = item.parent ?? item;
        const set = bySuite.get(suite) ?? new Set<vscode.TestItem>();
        if (item.parent) set.add(item);
        else for (const child of iterate(item.children)) set.add(child);
        bySuite.set(suite, set);
      }
      for (const ex of request.exclude ?? []) for (const set of bySuite.values()) set.delete(ex);
      const { parseTask, testTask, fieldSpan } = await engine();
      for (const [suite, tests] of bySuite) {
        if (token.isCancellationRequested) break;
        for (const t of tests) run.started(t);
        const uri = suite.uri!;
        // The text in the editor, unsaved edits included, as Test Task does.
        const doc = vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri.toString());
        const text = doc ? doc.getText() : new TextDecoder().decode(await vscode.workspace.fs.readFile(uri));
        const { task, diagnostics } = parseTask(text, uri.fsPath);
        if (!task) {
          const first = diagnostics.find((d) => d.severity === 'error');
          for (const t of tests)
            this.report(
              run,
              t,
              'errored',
              new vscode.TestMessage(`The task file has errors: ${first?.message ?? 'see the Problems panel'}`),
            );
          continue;
        }
        const report = await testTask(uri.fsPath, task);
        for (const t of tests) {
          const r = report.results.find((x) => `${uri.toString()}#${x.fixture}` === t.id);
          if (!r) this.report(run, t, 'skipped', null);
          else if (r.ok) this.report(run, t, 'passed', null);
          else this.report(run, t, r.error ? 'errored' : 'failed', messageOf(r, uri, text, fieldSpan));
        }
      }
    } finally {
      run.end();
      this.ran.fire();
    }
  }

  private report(
    run: vscode.TestRun,
    t: vscode.TestItem,
    state: FixtureTestOutcome['state'],
    message: vscode.TestMessage | null,
  ): void {
    if (state === 'passed') run.passed(t);
    else if (state === 'skipped') run.skipped(t);
    else if (state === 'errored') run.errored(t, message!);
    else run.failed(t, message!);
    this.lastRun.set(t.id, {
      id: t.id,
      state,
      message: message ? (typeof message.message === 'string' ? message.message : message.message.value) : null,
      expected: message?.expectedOutput,
      actual: message?.actualOutput,
      line: message?.location?.range.start.line,
    });
  }

  dispose(): void {
    for (const d of this.disposables) d.dispose();
  }
}

/**
 * A failed fixture as a message; changed fields as a diff of expected and actual values, one line each, the field
 * first (an item's label can be a whole quote, which pushed the field off-screen), and the message placed at the
 * first changed field in the task file (the marker sat on line 1).
 */
function messageOf(
  r: FixtureResult,
  taskUri: vscode.Uri,
  taskText: string,
  spanOf: typeof fieldSpan,
): vscode.TestMessage {
  const message = messageText(r);
  const first = r.changed[0];
  const at = spanOf(taskText, r.rule, first ? itemType(first.item) : '', first?.field ?? '');
  if (at) message.location = new vscode.Location(taskUri, new vscode.Position(at.line, 0));
  return message;
}

/** The item type of a change's label (`book UPC123`, `book #2`). */
function itemType(label: string): string {
  return label.split(' ', 1)[0]!;
}

/** An item's label cut to a length that leaves its line readable. */
function shortLabel(label: string): string {
  return label.length > 40 ? `${label.slice(0, 39)}…` : label;
}

function messageText(r: FixtureResult): vscode.TestMessage {
  if (r.error) return new vscode.TestMessage(r.error);
  const lines = [
    ...r.removedItems.map((i) => `item gone: ${i}`),
    ...r.addedItems.map((i) => `new item: ${i}`),
    ...r.removedLinks.map((l) => `link no longer followed: ${l}`),
    ...r.addedLinks.map((l) => `new link followed: ${l}`),
    ...r.removedProblems.map((p) => `problem gone: ${p}`),
    ...r.addedProblems.map((p) => `new problem: ${p}`),
    ...r.unmet,
  ];
  const summary = `${r.rule} on ${r.url}: ${[r.changed.length ? `${r.changed.length} field${r.changed.length === 1 ? '' : 's'} changed` : '', ...lines].filter(Boolean).join('; ')}`;
  if (r.changed.length === 0) return new vscode.TestMessage(summary);
  const side = (pick: (c: FieldChange) => unknown) =>
    r.changed.map((c) => `${c.field}: ${JSON.stringify(pick(c) ?? null)}   (${shortLabel(c.item)})`).join('\n');
  return vscode.TestMessage.diff(
    summary,
    side((c) => c.expected),
    side((c) => c.actual),
  );
}

function* iterate(items: vscode.TestItemCollection): Iterable<vscode.TestItem> {
  for (const [, item] of items) yield item;
}
