import * as vscode from 'vscode';
import { createWriteStream } from 'node:fs';
import { dirname } from 'node:path';
import { finished } from 'node:stream/promises';
import { rm } from 'node:fs/promises';
import type { CrawlTask } from '../../core/task/model';
import { taskKeys } from '../../frontier/keys';
import { openStore } from '../../store';
import { storeUrlFor } from '../../run/storeAttachment';
import type { CrawlStudioApi } from '../api';
import { PanelRegistry, WebviewPanelBase } from '../panel';
import { initTablePanel, panelOptions } from '../webview';
import { parseResultsMessage } from './messages';
import {
  EMPTY_VIEW,
  RESULTS_VIEW_TYPE,
  type ExportFormat,
  type FromResults,
  type ResultsViewState,
  type ToResults,
} from './protocol';
import { DEFAULT_HIDDEN, ResultsSource } from './source';

// One results panel per task file: the task's stored items as a virtual table in a webview. The webview asks
// for pages of rows as it scrolls; this side answers from the store through ResultsSource, and while the panel
// is visible polls the count so new items appear during a crawl. Store calls are queued one at a time (the
// query index is not re-entrant, and SQLite serialises them anyway).

const DESIGNER_PREVIEW_COMMAND = 'crawlStudio.designer.openPreview';

export interface ResultsActions {
  showJob(task: CrawlTask, url: string, run: string | null): Promise<void>;
}

export class ResultsPanel extends WebviewPanelBase<ToResults> {
  static readonly panels = new PanelRegistry<ResultsPanel>(RESULTS_VIEW_TYPE);
  private view: ResultsViewState;
  private queue: Promise<unknown> = Promise.resolve();
  private timer: NodeJS.Timeout | null = null;
  private lastCount = '';
  private lastStored = -1;
  private source: ResultsSource | null = null;
  /** The webview's last query applied here (init carries it back). */
  private answered = 0;

  private constructor(
    private readonly context: vscode.ExtensionContext,
    private readonly api: CrawlStudioApi,
    private readonly actions: ResultsActions,
    panel: vscode.WebviewPanel,
    readonly task: CrawlTask,
    view: ResultsViewState,
  ) {
    super(panel);
    this.view = view;
    initTablePanel(panel, context.extensionUri, 'results', `Results: ${task.name}`);
    this.disposables.push(panel.onDidChangeViewState(() => this.schedulePoll(0)));
  }

  static open(
    context: vscode.ExtensionContext,
    api: CrawlStudioApi,
    actions: ResultsActions,
    task: CrawlTask,
    existing?: vscode.WebviewPanel,
    view?: ResultsViewState,
  ): ResultsPanel {
    const initial = view ?? { ...EMPTY_VIEW, hidden: [...DEFAULT_HIDDEN] };
    return ResultsPanel.panels.show(
      task.file,
      `Results: ${task.name}`,
      panelOptions(context.extensionUri),
      existing,
      (panel) => new ResultsPanel(context, api, actions, panel, task, initial),
    ).panel;
  }

  private async store(): Promise<ResultsSource> {
    if (!this.source)
      this.source = new ResultsSource(
        await openStore(storeUrlFor(this.task), { task: this.task.name, cwd: dirname(this.task.file) }),
        this.task.name,
        [...new Set(this.task.rules.flatMap((r) => r.items.map((i) => i.type)))],
      );
    return this.source;
  }

  /** Runs store work one call at a time; failures are shown in the webview, never thrown at it. */
  private serial<T>(fn: () => Promise<T>): Promise<T | undefined> {
    const next = this.queue.then(fn, fn).catch((err: unknown) => {
      this.post({ type: 'error', message: err instanceof Error ? err.message : String(err) });
      return undefined;
    });
    this.queue = next;
    return next;
  }

  /** Entry point of webview messages (and of the test hook, which sends the same shapes). */
  async receive(raw: unknown): Promise<boolean> {
    const m = parseResultsMessage(raw);
    if (!m || this.disposed) return false;
    await this.handle(m);
    return true;
  }

  private async handle(m: FromResults): Promise<void> {
    switch (m.type) {
      case 'ready':
        await this.serial(() => this.init(m.view ?? this.view));
        return;
      case 'query':
        await this.serial(() => this.applyQuery(m.view, m.seq));
        return;
      case 'rows':
        await this.serial(async () => {
          const src = await this.store();
          if (m.generation !== src.generation) return;
          this.post({
            type: 'rows',
            generation: m.generation,
            offset: m.offset,
            rows: await src.rows(m.offset, m.limit),
          });
        });
        return;
      case 'detail':
        await this.serial(() => this.postDetail(m.offset));
        return;
      case 'openUrl': {
        const item = await this.serial(async () => (await this.store()).item(m.offset));
        // Only the stored item's own URL, and only http(s): the webview never names what gets opened.
        if (item?.url && /^https?:\/\//i.test(item.url))
          await vscode.env.openExternal(vscode.Uri.parse(item.url, true));
        return;
      }
      case 'showJob': {
        const item = await this.serial(async () => (await this.store()).item(m.offset));
        if (item?.url) await this.actions.showJob(this.task, item.url, item.run);
        return;
      }
      case 'openPreview': {
        const item = await this.serial(async () => (await this.store()).item(m.offset));
        if (!item?.url || !/^https?:\/\//i.test(item.url)) return;
        if (!(await vscode.commands.getCommands(true)).includes(DESIGNER_PREVIEW_COMMAND)) {
          void vscode.window.showInformationMessage(
            'The designer preview is not available in this version of Crawl Studio.',
          );
          return;
        }
        // The designer's signature: (task file, rule, url).
        await vscode.commands.executeCommand(
          DESIGNER_PREVIEW_COMMAND,
          vscode.Uri.file(this.task.file),
          item.rule ?? undefined,
          item.url,
        );
        return;
      }
      case 'export':
        await this.exportWithDialog(m.format);
        return;
      case 'quality':
        await this.serial(() => this.edit(m.seq, { showQuality: m.show }));
        return;
      case 'columns':
        await this.serial(() => this.edit(m.seq, { hidden: [...m.hidden] }));
        return;
    }
  }

  /** A row's every field, with its source, run and (in the change filter) its old and new values. */
  private async postDetail(offset: number): Promise<void> {
    const src = await this.store();
    const item = await src.item(offset);
    if (!item) return;
    const fields = Object.entries(item.data).map(([name, value]) => ({ name, value }));
    const change = src.changeAt(offset);
    this.post({
      type: 'detail',
      detail: {
        offset,
        type: item.type,
        key: item.key,
        url: item.url,
        rule: item.rule,
        run: item.run,
        fetchedAt: item.fetchedAt,
        fields,
        ...(change ? { change } : {}),
      },
    });
  }

  /** A change of the view that reads no rows (field quality shown or hidden, columns hidden), in order with queries. */
  private async edit(seq: number, change: Partial<Pick<ResultsViewState, 'showQuality' | 'hidden'>>): Promise<void> {
    this.answered = seq;
    this.view = { ...this.view, ...change };
    if (change.showQuality) await this.postQuality();
  }

  /** Shows a view the extension asks for (Find URL's item, a command's filter): the webview takes it as its own. */
  async show(view: ResultsViewState): Promise<void> {
    if (!this.disposed) await this.serial(() => this.applyQuery(view));
  }

  private async init(view: ResultsViewState): Promise<void> {
    // A webview (re)loaded: it numbers its queries from 1 again.
    this.answered = 0;
    const src = await this.store();
    this.view = await src.setQuery(view);
    const canPreview = (await vscode.commands.getCommands(true)).includes(DESIGNER_PREVIEW_COMMAND);
    await this.postInit(canPreview);
    this.lastCount = '';
    await this.postCount();
    if (this.view.showQuality) await this.postQuality();
    this.schedulePoll();
  }

  /** `seq`: the webview's number for this query; a query from this side keeps the last one. */
  private async applyQuery(view: ResultsViewState, seq = this.answered): Promise<void> {
    this.answered = seq;
    const src = await this.store();
    const needsIndex =
      Object.values(view.filters).some((t) => t !== '') ||
      (view.sort !== null && !['_key', '_fetched_at'].includes(view.sort.field)) ||
      (view.run ?? 'latest') !== (this.view.run ?? 'latest');
    if (needsIndex) this.post({ type: 'busy', text: 'Filtering…' });
    this.view = await src.setQuery(view);
    // Every query is answered with the view as applied (a new type brings its columns, a run its filter) and the
    // query's seq, so the webview can tell this answer from a poll's older one.
    await this.postInit();
    this.lastCount = '';
    await this.postCount();
    if (needsIndex) this.post({ type: 'busy', text: null });
    if (this.view.showQuality) await this.postQuality();
  }

  private lastInit(): Extract<ToResults, { type: 'init' }> | undefined {
    return this.lastPosted.get('init') as Extract<ToResults, { type: 'init' }> | undefined;
  }

  /** The type, its columns, and the runs with the one shown. */
  private async postInit(canPreview = this.lastInit()?.canPreview ?? false): Promise<void> {
    const src = await this.store();
    const columns = this.view.itemType ? await src.columns(this.view.itemType) : [];
    this.post({
      type: 'init',
      task: this.task.name,
      file: this.task.file,
      store: src.store.location,
      types: await src.types(),
      columns,
      view: this.view,
      seq: this.answered,
      canPreview,
      runs: await src.runsShown(),
      changes: await src.changesShown(),
    });
  }

  private async postCount(): Promise<void> {
    const src = await this.store();
    if (src.type === null && (await src.types()).length > 0) {
      // The first items of a crawl that had stored none when the panel opened: show their type now.
      this.view = await src.setQuery(this.view);
      await this.postInit();
    }
    let { total, stored } = await src.count();
    if (stored !== this.lastStored) {
      // New items may come from a new run: the latest run (the default view) is then that one.
      this.lastStored = stored;
      if ((await src.refreshRuns()) && (this.view.run ?? 'latest') === 'latest') {
        this.view = await src.setQuery(this.view);
        ({ total, stored } = await src.count());
        await this.postInit();
      } else if (JSON.stringify(await src.runsShown()) !== JSON.stringify(this.lastInit()?.runs)) await this.postInit();
    }
    // A run closed its history: the change filter offers it, and shows it when it follows the latest.
    if (await src.refreshChangeRuns()) {
      if (src.changeMode && (this.view.changeRun ?? 'latest') === 'latest') this.view = await src.setQuery(this.view);
      ({ total, stored } = await src.count());
      await this.postInit();
    }
    const running = await this.isRunning();
    const types = await src.types();
    const columns = src.type ? await src.columns(src.type) : [];
    const sig = JSON.stringify([src.generation, total, stored, running, columns, types]);
    if (sig === this.lastCount) return;
    this.lastCount = sig;
    this.post({ type: 'count', generation: src.generation, total, stored, running, indexing: false, columns, types });
  }

  private async postQuality(): Promise<void> {
    const src = await this.store();
    const q = await src.fieldQuality();
    if (q) this.post({ type: 'quality', itemType: q.type, run: src.run, total: q.total, fields: q.fields });
  }

  private async isRunning(): Promise<boolean> {
    if (this.api.crawls.get(this.task.name)) return true;
    const redis = this.api.connection.peek();
    if (!redis) return false;
    try {
      return (await redis.hget(taskKeys(this.task.name).meta, 'state')) === 'running';
    } catch {
      return false;
    }
  }

  /** Polls the count while visible: every second during a crawl, every five otherwise. */
  private schedulePoll(delayMs?: number): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (this.disposed || !this.panel.visible) return;
    const running =
      (this.lastPosted.get('count') as Extract<ToResults, { type: 'count' }> | undefined)?.running ?? true;
    this.timer = setTimeout(
      () => {
        void this.serial(async () => {
          await this.postCount();
          if (this.view.showQuality) await this.postQuality();
        }).finally(() => this.schedulePoll());
      },
      delayMs ?? (running ? 1000 : 5000),
    );
  }

  private async exportWithDialog(format: ExportFormat): Promise<void> {
    const folder = vscode.workspace.workspaceFolders?.[0]?.uri ?? vscode.Uri.file(dirname(this.task.file));
    const target = await vscode.window.showSaveDialog({
      defaultUri: vscode.Uri.joinPath(folder, `${this.task.name}-${this.view.itemType ?? 'items'}.${format}`),
      filters: { [format.toUpperCase()]: [format] },
      title: `Export the current view of '${this.task.name}' as ${format.toUpperCase()}`,
      saveLabel: 'Export',
    });
    if (!target) return;
    // A big store takes a while: the export shows its progress and can be cancelled (the partial file is removed).
    const n = await vscode.window.withProgress(
      {
        location: vscode.ProgressLocation.Notification,
        title: `Exporting '${this.task.name}' as ${format.toUpperCase()}…`,
        cancellable: true,
      },
      (_p, token) => this.exportTo(format, target.fsPath, token),
    );
    if (n !== undefined) {
      void vscode.window
        .showInformationMessage(`Exported ${n} item(s) to ${vscode.workspace.asRelativePath(target)}.`, 'Open')
        .then((a) => a && vscode.window.showTextDocument(target));
    }
  }

  /** Exports the current view to a file the person chose (or a test named); returns the item count, undefined if cancelled. */
  async exportTo(format: ExportFormat, path: string, token?: vscode.CancellationToken): Promise<number | undefined> {
    return this.serial(async () => {
      const out = createWriteStream(path);
      const sub = token?.onCancellationRequested(() => out.destroy(new ExportCancelled()));
      try {
        const r = await (await this.store()).exportTo(format, out);
        out.end();
        await finished(out);
        if (token?.isCancellationRequested) throw new ExportCancelled();
        return r.items;
      } catch (err) {
        out.destroy();
        if (!token?.isCancellationRequested) throw err;
        await rm(path, { force: true });
        void vscode.window.showInformationMessage(`Export of '${this.task.name}' cancelled; nothing was written.`);
        return undefined;
      } finally {
        sub?.dispose();
      }
    });
  }

  /** Stored items of every type (what the first "Open Results" returned). */
  async storedCount(): Promise<number> {
    return (
      (await this.serial(async () => {
        const src = await this.store();
        let n = 0;
        for (const t of await src.types()) n += await src.store.count(t);
        return n;
      })) ?? 0
    );
  }

  /** The state VS Code keeps for the serializer is the webview's own (setState); this is the host's copy. */
  get state(): { file: string; view: ResultsViewState } {
    return { file: this.task.file, view: this.view };
  }

  protected release(): void {
    if (this.timer) clearTimeout(this.timer);
    ResultsPanel.panels.forget(this.task.file, this);
    const src = this.source;
    void this.queue.finally(() => src?.close());
  }
}

class ExportCancelled extends Error {
  constructor() {
    super('export cancelled');
    this.name = 'ExportCancelled';
  }
}
