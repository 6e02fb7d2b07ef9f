import { dirname, join } from 'node:path';
import * as vscode from 'vscode';
import { formatTestReport, type TaskTestReport } from '../../core/designer/fixtures';
import { fixturePages, saveFixture, testTask } from '../../workspace/fixtureStore';
import { choosePreviewPage, type FetchedStart, type PageForRule } from '../../core/designer/pageChoice';
import { runPagesOf } from './runPages';
import { planFieldInsert, planInsert, type InsertPlan } from '../../core/designer/insert';
import type { StructuredSource } from '../../core/extract/structuredData';
import { chooseRule } from '../../core/designer/preview';
import { scaffoldTask, taskName, type ScaffoldOptions } from '../../core/designer/scaffold';
import { proposeFollows } from '../../core/designer/followProposals';
import { proposeDetailItem, proposeListItems } from '../../core/designer/itemProposals';
import { formatDiagnostic } from '../../core/task/diagnostics';
import { parseTaskText } from '../../workspace/taskFile';
import { COMMANDS, PREVIEW_VIEW_TYPE, TEST_COMMANDS } from './commands';
import {
  PICK_IN_PREVIEW,
  RulePreviewLenses,
  TaskCompletions,
  TaskDiagnostics,
  TaskHovers,
  ZeroMatchFixes,
} from './editorFeatures';
import { PageSource } from './pages';
import { PreviewPanel, type PanelHost, type PanelSnapshot } from './previewPanel';
import { CrawlSecrets } from '../crawlSecrets';
import type { CrawlTask } from '../../core/task/model';
import type { LazyHost } from '../lazy';
import type { SecretSource } from './previewAccess';
import { activeTaskDocument, isTaskDocument, pickTaskFile, TASK_FILES, taskFileOf } from '../taskFiles';
import { testHooksEnabled } from '../testHooks';

// The crawl designer: a live preview of a task file against a real page, the selector picker, and editor
// intelligence for *.crawl.yaml. Everything here is glue; what is computed lives in src/core/designer.

export { COMMANDS };

export interface NewTaskOptions {
  readonly folder?: string;
  readonly name?: string;
  readonly start?: string;
  /** Open the preview beside the new file (default: when run from the palette). */
  readonly preview?: boolean;
}

class Designer implements PanelHost, vscode.Disposable {
  readonly panels = new Map<string, PreviewPanel>();
  private readonly sources = new Map<string, PageSource>();
  readonly diagnostics: TaskDiagnostics;
  readonly output = vscode.window.createOutputChannel('Crawl Studio Designer', { log: true });
  private readonly fixturesOutput = vscode.window.createOutputChannel('Crawl Studio Fixtures');
  /** The preview the person used last: Insert and Save Page as Fixture act on it. */
  private active: PreviewPanel | null = null;

  constructor(
    private readonly context: vscode.ExtensionContext,
    private readonly secrets?: SecretSource,
  ) {
    // Selectors are checked against the pages the open preview shows, and only while it is open (issue 32, item 6).
    this.diagnostics = new TaskDiagnostics((doc) =>
      Promise.resolve(this.panels.get(doc.uri.toString())?.pagesByRule() ?? new Map()),
    );
  }

  get extensionUri(): vscode.Uri {
    return this.context.extensionUri;
  }

  log(message: string): void {
    this.output.warn(message);
  }

  /** As a crawl started here gives its workers: the editor's environment, Secret Storage over it. */
  async secretEnv(task: CrawlTask | null): Promise<Readonly<Record<string, string | undefined>>> {
    return { ...process.env, ...(task ? await new CrawlSecrets(this.context.secrets).envFor(task) : {}) };
  }

  cacheDir(uri: vscode.Uri): vscode.Uri {
    if (uri.scheme === 'file') return vscode.Uri.file(join(dirname(uri.fsPath), '.crawl', 'pages'));
    return vscode.Uri.joinPath(this.context.globalStorageUri, 'pages');
  }

  sourceFor(uri: vscode.Uri): PageSource {
    const dir = this.cacheDir(uri).fsPath;
    let s = this.sources.get(dir);
    if (!s) {
      // The editor's environment, with Secret Storage's values over it: what Start Crawl gives its workers.
      s = new PageSource(
        dir,
        async (task) => ({ ...process.env, ...(await this.secrets?.envFor(task)) }),
        (m) => this.log(m),
      );
      this.sources.set(dir, s);
    }
    return s;
  }

  panelFor(uri?: vscode.Uri): PreviewPanel | undefined {
    if (uri) return this.panels.get(uri.toString());
    return this.active ?? [...this.panels.values()][0];
  }

  /** Opens (or reveals) the preview of a task file; `restored`: a panel VS Code brings back after a reload. */
  async openPreview(
    uri?: vscode.Uri,
    rule?: string,
    url?: string,
    preserveFocus = true,
    restored?: vscode.WebviewPanel,
    why?: { why: string; rule: string },
  ): Promise<PreviewPanel> {
    const target = uri ?? (await this.taskUri());
    if (!target) throw new Error('Open a task file (*.crawl.yaml) to preview.');
    const existing = this.panels.get(target.toString());
    if (existing && restored) {
      restored.dispose();
      return existing;
    }
    if (existing) {
      if (rule !== undefined) existing.chooseRule(rule);
      existing.panel.reveal(undefined, preserveFocus);
      this.active = existing;
      if (url) await existing.openPage(url, false);
      return existing;
    }
    const doc = await vscode.workspace.openTextDocument(target);
    const name = target.path.split('/').pop() ?? 'task';
    const options = PreviewPanel.options(this.extensionUri, this.cacheDir(target));
    const webviewPanel =
      restored ??
      vscode.window.createWebviewPanel(
        PreviewPanel.viewType,
        `Preview ${name}`,
        { viewColumn: vscode.ViewColumn.Beside, preserveFocus },
        options,
      );
    if (restored) {
      restored.webview.options = options;
      restored.title = `Preview ${name}`;
    }
    const panel = new PreviewPanel(target, webviewPanel, this.sourceFor(target), this, rule ?? null);
    this.panels.set(target.toString(), panel);
    this.active = panel;
    const editor = vscode.window.visibleTextEditors.find((e) => e.document.uri.toString() === target.toString());
    panel.cursor = editor ? doc.offsetAt(editor.selection.active) : null;
    panel.onDidClose(() => {
      this.panels.delete(target.toString());
      if (this.active === panel) this.active = null;
      // Its "matches 0 elements" warnings were about its pages: they go with it.
      const open = vscode.workspace.textDocuments.find((d) => d.uri.toString() === target.toString());
      if (open) void this.diagnostics.check(open);
    });
    webviewPanel.onDidChangeViewState((e) => e.webviewPanel.active && (this.active = panel));
    if (why) panel.noteNextPage(why.why, why.rule);
    await panel.openInitial(url ?? null);
    return panel;
  }

  /**
   * The Preview lens of a rule: the preview on a page that rule handles (pageChoice.ts: the page on show if it is
   * one, the last run's, a fixture's, a start URL, a link on a start page, one previewed before), saying which
   * and why; with none, the page on show with the rule chosen, and that said too.
   */
  async previewRule(uri: vscode.Uri, rule: string): Promise<PreviewPanel> {
    const doc = await vscode.workspace.openTextDocument(uri);
    const task = parseTaskText(doc.getText(), uri.fsPath).task;
    const existing = this.panels.get(uri.toString());
    const choice = task ? await this.pageForRule(uri, task, rule, existing) : null;
    if (choice && existing && choice.source === 'shown') {
      const panel = await this.openPreview(uri, rule);
      panel.notePage(choice.why, rule);
      return panel;
    }
    if (choice) {
      existing?.noteNextPage(choice.why, rule);
      return this.openPreview(uri, rule, choice.url, true, undefined, { why: choice.why, rule });
    }
    const panel = await this.openPreview(uri, rule);
    panel.notePage(
      `no page of rule ${rule} found (no run, fixture, start URL or start-page link leads to one): the rule is applied to this page, its selectors unchecked`,
      rule,
      true,
    );
    return panel;
  }

  private async pageForRule(
    uri: vscode.Uri,
    task: CrawlTask,
    rule: string,
    panel: PreviewPanel | undefined,
  ): Promise<PageForRule | null> {
    const source = this.sourceFor(uri);
    const quick = choosePreviewPage(task, rule, { shown: panel?.shownPage() ?? null });
    if (quick) return quick;
    const fixtures = uri.scheme === 'file' ? await fixturePages(uri.fsPath, task.name).catch(() => []) : [];
    const cached = (await source.list().catch(() => [])).flatMap((m) =>
      m.rule && !m.request ? [{ url: m.url, rule: m.rule }] : [],
    );
    const runPages = await runPagesOf(task);
    const withoutLinks = choosePreviewPage(task, rule, { runPages, fixtures });
    if (withoutLinks) return withoutLinks;
    // The start pages' links, read through the page cache (a fetch the first time): at most three start URLs.
    const startPages: FetchedStart[] = [];
    for (const s of task.start.filter((x) => !x.request).slice(0, 3)) {
      try {
        const loaded = await source.load(s.url, task, { refetch: false, env: await this.secretEnv(task) });
        if (!loaded.page.json) startPages.push({ facts: loaded.page.facts, html: loaded.page.html });
      } catch (err) {
        this.output.info(`Preview lens: ${s.url}: ${err instanceof Error ? err.message : String(err)}`);
      }
    }
    return choosePreviewPage(task, rule, { runPages, fixtures, startPages, cached });
  }

  /** The task file to act on: the active editor's, else the one of the last preview, else one to pick. */
  private async taskUri(): Promise<vscode.Uri | undefined> {
    const active = activeTaskDocument();
    if (active) return active.uri;
    if (this.active) return this.active.uri;
    return pickTaskFile('Task file', { limit: 50 });
  }

  async insert(panel: PreviewPanel, selector: string, all: boolean): Promise<string | null> {
    return this.applyPlan(panel, (text, cursor) => planInsert(text, cursor, selector, { all }));
  }

  async insertField(panel: PreviewPanel, source: StructuredSource, path: string): Promise<string | null> {
    // A field added after the cursor (a new field of its item) leaves the cursor where it was, so the next Add adds
    // another field rather than replacing this one.
    return this.applyPlan(
      panel,
      (text, cursor) => planFieldInsert(text, cursor, source, path, panel.rule),
      (plan, cursor) => plan.start <= cursor,
    );
  }

  private async applyPlan(
    panel: PreviewPanel,
    planFor: (text: string, cursor: number) => InsertPlan,
    follow: (plan: InsertPlan, cursor: number) => boolean = () => true,
  ): Promise<string | null> {
    const doc = panel.document ?? (await vscode.workspace.openTextDocument(panel.uri));
    const editor = vscode.window.visibleTextEditors.find((e) => e.document === doc);
    const cursor = panel.cursor ?? (editor ? doc.offsetAt(editor.selection.active) : doc.getText().length);
    const plan = planFor(doc.getText(), cursor);
    const edit = new vscode.WorkspaceEdit();
    edit.replace(doc.uri, new vscode.Range(doc.positionAt(plan.start), doc.positionAt(plan.end)), plan.text);
    if (!(await vscode.workspace.applyEdit(edit))) {
      void vscode.window.showWarningMessage(`Could not insert into ${vscode.workspace.asRelativePath(doc.uri)}.`);
      return null;
    }
    if (!follow(plan, cursor)) return plan.target;
    // Keep the cursor in what was written, so the preview highlights the new selector's matches.
    const end = doc.positionAt(plan.start + plan.text.length);
    if (editor) editor.selection = new vscode.Selection(end, end);
    panel.cursorMoved(doc.offsetAt(end));
    return plan.target;
  }

  pageShown(panel: PreviewPanel): void {
    const doc = panel.document;
    if (doc) void this.diagnostics.check(doc);
  }

  async saveFixture(panel?: PreviewPanel): Promise<string | null> {
    const p = panel ?? this.panelFor();
    if (!p?.loaded) {
      void vscode.window.showWarningMessage(
        'Open the preview on a page first: the fixture is that page and what the task extracts from it.',
      );
      return null;
    }
    if (!p.task) {
      void vscode.window.showWarningMessage(
        'The task file has errors: fix them, then save the fixture (it records what the task extracts).',
      );
      return null;
    }
    const { meta, page } = p.loaded;
    const choice = chooseRule(p.task, meta.finalUrl, meta.url, p.rule);
    if (!choice.rule) {
      void vscode.window.showWarningMessage('No rule applies to this page.');
      return null;
    }
    const file = await saveFixture(
      p.uri.fsPath,
      p.task,
      {
        url: meta.url,
        finalUrl: meta.finalUrl,
        html: page.html,
        status: meta.status,
        fetchedAt: meta.fetchedAt,
        contentType: meta.contentType,
        rendered: meta.rendered === true,
      },
      choice.rule.name,
      choice.depth,
    );
    void vscode.window
      .showInformationMessage(`Saved fixture ${vscode.workspace.asRelativePath(file)}: "Test Task" re-runs it.`, 'Open')
      .then((a) => {
        if (a) void vscode.window.showTextDocument(vscode.Uri.file(file));
      });
    return file;
  }

  async testTask(uri?: vscode.Uri): Promise<TaskTestReport | null> {
    const target = uri ?? (await this.taskUri());
    if (!target) return null;
    const doc = await vscode.workspace.openTextDocument(target);
    // The text in the editor, unsaved edits included: that is what the person is testing.
    const { task, diagnostics } = parseTaskText(doc.getText(), target.fsPath);
    const report: TaskTestReport = task
      ? await testTask(target.fsPath, task)
      : {
          task: target.fsPath,
          file: target.fsPath,
          errors: diagnostics.filter((d) => d.severity === 'error').map(formatDiagnostic),
          results: [],
          ok: false,
        };
    this.fixturesOutput.clear();
    this.fixturesOutput.appendLine(formatTestReport(report));
    const changed = report.results.filter((r) => !r.ok).length;
    const summary =
      report.errors.length > 0 && report.results.length === 0
        ? `Test Task: ${report.errors[0]}`
        : changed === 0
          ? `Test Task: all ${report.results.length} fixture(s) unchanged.`
          : `Test Task: ${changed} of ${report.results.length} fixture(s) changed.`;
    const show = report.ok
      ? vscode.window.showInformationMessage(summary, 'Show Report')
      : vscode.window.showWarningMessage(summary, 'Show Report');
    void show.then((a) => a && this.fixturesOutput.show(true));
    return report;
  }

  async newTaskFile(opts: NewTaskOptions = {}): Promise<vscode.Uri | null> {
    const interactive = opts.name === undefined;
    const folder = opts.folder ?? vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
    if (!folder) {
      void vscode.window.showWarningMessage(
        'Open a folder first: the task file, its page cache and its fixtures live in it.',
      );
      return null;
    }
    const name =
      opts.name ??
      (await vscode.window.showInputBox({
        prompt: 'Task name (also its queue name)',
        value: 'my-crawl',
        validateInput: (v) => (v.trim() ? null : 'A name'),
      }));
    if (name === undefined) return null;
    const start =
      opts.start ??
      (await vscode.window.showInputBox({
        prompt: 'First start URL',
        value: 'https://example.com/',
        ignoreFocusOut: true, // the URL is often copied from a browser
        validateInput: (v) => (/^https?:\/\/\S+$/.test(v.trim()) ? null : 'An http(s) URL'),
      }));
    if (start === undefined) return null;
    const stem = taskName(name);
    let uri = vscode.Uri.file(join(folder, `${stem}.crawl.yaml`));
    for (let i = 2; await exists(uri); i++) uri = vscode.Uri.file(join(folder, `${stem}-${i}.crawl.yaml`));
    const proposals = await this.proposeFromPages(uri, start.trim());
    await vscode.workspace.fs.writeFile(
      uri,
      Buffer.from(scaffoldTask({ name: stem, start: start.trim(), ...proposals })),
    );
    const doc = await vscode.workspace.openTextDocument(uri);
    await vscode.window.showTextDocument(doc, { preview: false });
    if (opts.preview ?? interactive) await this.openPreview(uri);
    return uri;
  }

  /**
   * What the start page shows (followProposals.ts, itemProposals.ts): its follow rules and the items of its
   * repeated blocks, then the main content of the first page its item links lead to, for the detail rule (issue
   * 32, item 5). Read through the preview's page cache (the preview then opens on it at once). Cancellable; a page
   * that cannot be read leaves the template's guesses for what it would have given.
   */
  private async proposeFromPages(uri: vscode.Uri, start: string): Promise<Omit<ScaffoldOptions, 'name' | 'start'>> {
    return vscode.window.withProgress(
      {
        location: vscode.ProgressLocation.Notification,
        title: `Reading ${start} for the links and items it shows…`,
        cancellable: true,
      },
      async (_progress, token) => {
        const abort = new AbortController();
        const sub = token.onCancellationRequested(() => abort.abort());
        const source = this.sourceFor(uri);
        try {
          const list = await source.load(start, null, { refetch: false, signal: abort.signal });
          const follows = proposeFollows(list.page.$, list.page.finalUrl);
          const listItems = follows.items ? proposeListItems(list.page.$, follows.items.selector) : null;
          if (!follows.items) return { follows, listItems };
          const detailUrl = follows.items.example;
          try {
            const detail = await source.load(detailUrl, null, { refetch: false, signal: abort.signal });
            return { follows, listItems, detailItem: proposeDetailItem(detail.page.$), detailUrl };
          } catch (err) {
            this.output.info(
              `New Task File: ${detailUrl}: ${err instanceof Error ? err.message : String(err)}; the detail rule's fields are a template.`,
            );
            return { follows, listItems };
          }
        } catch (err) {
          this.output.info(
            `New Task File: ${err instanceof Error ? err.message : String(err)}; the follow rules are guesses.`,
          );
          return {};
        } finally {
          sub.dispose();
        }
      },
    );
  }

  snapshot(uri?: vscode.Uri): PanelSnapshot | null {
    return this.panelFor(uri)?.snapshot() ?? null;
  }

  dispose(): void {
    for (const p of [...this.panels.values()]) p.dispose();
    this.diagnostics.dispose();
    this.output.dispose();
    this.fixturesOutput.dispose();
  }
}

async function exists(uri: vscode.Uri): Promise<boolean> {
  try {
    await vscode.workspace.fs.stat(uri);
    return true;
  } catch {
    return false;
  }
}

/** The webview's kept state, checked: it comes back from disk, written by the webview. */
function restoredPreview(state: unknown): { uri: vscode.Uri; rule: string | null; url: string | null } | null {
  if (typeof state !== 'object' || state === null) return null;
  const s = state as Record<string, unknown>;
  if (typeof s.uri !== 'string') return null;
  let uri: vscode.Uri;
  try {
    uri = vscode.Uri.parse(s.uri, true);
  } catch {
    return null;
  }
  if (!/\.crawl\.ya?ml$/.test(uri.path)) return null;
  const rule = typeof s.rule === 'string' && /^[A-Za-z_][A-Za-z0-9_-]{0,63}$/.test(s.rule) ? s.rule : null;
  const url = typeof s.url === 'string' && /^https?:\/\//i.test(s.url) && s.url.length <= 2048 ? s.url : null;
  return { uri, rule, url };
}

function asUri(v: unknown): vscode.Uri | undefined {
  if (v instanceof vscode.Uri) return v;
  const file = taskFileOf(v);
  if (file) return file;
  if (typeof v === 'string' && v) return v.includes('://') ? vscode.Uri.parse(v) : vscode.Uri.file(v);
  return undefined;
}

/**
 * Sets the crawl designer up (live preview, selector picker, editor intelligence for *.crawl.yaml): its
 * commands' handlers go to `host` (index.ts registered the command ids at activation and forwards to them), its
 * providers and listeners to the context.
 */
export function activateDesigner(
  context: vscode.ExtensionContext,
  host: LazyHost,
  secrets?: SecretSource,
): { readonly diagnostics: TaskDiagnostics } {
  const d = new Designer(context, secrets);
  registerDesignerCommands(d, context, host);
  registerEditorFeatures(d, context);
  return { diagnostics: d.diagnostics };
}

/** The designer's commands (their ids registered at activation by index.ts), its test hooks, its serializer. */
function registerDesignerCommands(d: Designer, context: vscode.ExtensionContext, host: LazyHost): void {
  const reg = (id: string, fn: (...args: never[]) => unknown) => host.command(id, fn);

  reg(COMMANDS.openPreview, async (uri?: vscode.Uri | string, rule?: string, url?: string) => {
    const target = asUri(uri);
    // A rule without a page (the Preview lens): a page that rule handles.
    if (target && typeof rule === 'string' && typeof url !== 'string') await d.previewRule(target, rule);
    else
      await d.openPreview(
        target,
        typeof rule === 'string' ? rule : undefined,
        typeof url === 'string' ? url : undefined,
      );
  });
  reg(COMMANDS.pickSelector, async () => {
    // The picker lives in the preview: bring it forward with the keyboard in it, ready for a click.
    const panel = await d.openPreview(undefined, undefined, undefined, false);
    panel.reveal();
  });
  reg(COMMANDS.insertSelector, async (selector?: string, all?: boolean) => {
    const panel = d.panelFor();
    if (!panel) throw new Error('Open the preview and click an element first.');
    const s = typeof selector === 'string' ? selector : panel.snapshot().suggestion?.suggestion.selector;
    if (!s) {
      void vscode.window.showInformationMessage('Click an element in the preview to get a selector, then Insert.');
      return null;
    }
    const multiple = typeof all === 'boolean' ? all : (panel.snapshot().suggestion?.suggestion.multiple ?? false);
    return d.insert(panel, s, multiple);
  });
  reg(COMMANDS.newTaskFile, (opts?: NewTaskOptions) => d.newTaskFile(opts && typeof opts === 'object' ? opts : {}));
  // Previews come back after a window reload with their page and rule (issue 23, item 10), as results and
  // dashboards do; a task file gone meanwhile closes its preview.
  host.serializer(PREVIEW_VIEW_TYPE, {
    async deserializeWebviewPanel(panel: vscode.WebviewPanel, state: unknown) {
      const r = restoredPreview(state);
      if (!r || !(await exists(r.uri))) {
        panel.dispose();
        return;
      }
      await d.openPreview(r.uri, r.rule ?? undefined, r.url ?? undefined, true, panel);
    },
  });
  reg(COMMANDS.savePageAsFixture, (uri?: vscode.Uri | string) => d.saveFixture(d.panelFor(asUri(uri))));
  reg(COMMANDS.testTask, (uri?: vscode.Uri | string) => d.testTask(asUri(uri)));
  if (testHooksEnabled(context)) {
    reg(TEST_COMMANDS.state, (uri?: vscode.Uri | string) => d.snapshot(asUri(uri)));
    reg(
      TEST_COMMANDS.message,
      async (uri: vscode.Uri | string, msg: unknown) => (await d.panelFor(asUri(uri))?.receive(msg)) ?? false,
    );
    reg(TEST_COMMANDS.pick, (uri: vscode.Uri | string, selector: string, nth = 0) => {
      const panel = d.panelFor(asUri(uri));
      const page = panel?.loaded?.page;
      if (!panel || !page) return null;
      const el = page.$(selector).toArray()[nth];
      const index = el ? page.index.get(el as never) : undefined;
      return index === undefined ? null : panel.pick(index);
    });
  }
}

/** Editor intelligence for *.crawl.yaml (completions, hovers, lenses, fixes, checks) and the preview following edits. */
function registerEditorFeatures(d: Designer, context: vscode.ExtensionContext): void {
  const forDoc = (doc: vscode.TextDocument) => d.panels.get(doc.uri.toString());
  context.subscriptions.push(
    d,
    vscode.languages.registerCompletionItemProvider(TASK_FILES, new TaskCompletions(), ':', ' ', '-', '{', ','),
    vscode.languages.registerHoverProvider(
      TASK_FILES,
      new TaskHovers((doc) => d.diagnostics.counts.get(doc.uri.toString())),
    ),
    vscode.languages.registerCodeLensProvider(TASK_FILES, new RulePreviewLenses()),
    vscode.languages.registerCodeActionsProvider(
      TASK_FILES,
      new ZeroMatchFixes(
        (doc) => d.diagnostics.counts.get(doc.uri.toString()),
        (doc) => Promise.resolve(d.panels.get(doc.uri.toString())?.pagesByRule() ?? new Map()),
      ),
      {
        providedCodeActionKinds: ZeroMatchFixes.kinds,
      },
    ),
    // The cursor on the selector (Insert writes there), and the preview on the page the warning was about.
    vscode.commands.registerCommand(
      PICK_IN_PREVIEW,
      async (uri: vscode.Uri, rule: string, url: string, offset: number) => {
        const editor = await vscode.window.showTextDocument(uri, { preview: false });
        const pos = editor.document.positionAt(offset);
        editor.selection = new vscode.Selection(pos, pos);
        const panel = await d.openPreview(uri, rule, url, false);
        panel.cursorMoved(offset);
        return true;
      },
    ),
    vscode.workspace.onDidChangeTextDocument((e) => {
      if (!isTaskDocument(e.document) || e.contentChanges.length === 0) return;
      d.diagnostics.schedule(e.document);
      forDoc(e.document)?.documentChanged();
    }),
    vscode.workspace.onDidOpenTextDocument((doc) => d.diagnostics.schedule(doc, 0)),
    vscode.workspace.onDidCloseTextDocument((doc) => isTaskDocument(doc) && d.diagnostics.forget(doc)),
    vscode.window.onDidChangeTextEditorSelection((e) => {
      const panel = forDoc(e.textEditor.document);
      if (panel) panel.cursorMoved(e.textEditor.document.offsetAt(e.selections[0]!.active));
    }),
  );
  for (const doc of vscode.workspace.textDocuments) d.diagnostics.schedule(doc, 0);
}
