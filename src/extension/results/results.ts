import * as vscode from 'vscode';
import { existsSync, readFileSync, realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, resolve, sep } from 'node:path';
import type { CrawlTask } from '../../core/task/model';
import { parseTaskText } from '../../workspace/taskFile';
import { registerDashboard } from '../dashboard';
import type { CrawlStudioApi } from '../api';
import { reporting } from '../errors';
import type { LazyHost } from '../lazy';
import { isTaskPath, taskFor } from '../taskFiles';
import { testHooksEnabled } from '../testHooks';
import { searchUrl, showFindings, showJobFor } from './jobs';
import { isViewState } from './messages';
import { CHANGE_FILTERS, EMPTY_VIEW, RESULTS_VIEW_TYPE, type ExportFormat, type ResultsViewState } from './protocol';
import { ResultsPanel } from './panel';
import { DEFAULT_HIDDEN } from './source';
import { isRecord } from './validate';

/**
 * Registers the results view ("Open Results"), Find URL and the crawl dashboard. Every command returns its
 * result so tests can drive it; `crawlStudio.results.test*` hooks expose what the panels last sent.
 */
export function activateResults(context: vscode.ExtensionContext, api: CrawlStudioApi, host: LazyHost): void {
  const actions = {
    showJob: (task: CrawlTask, url: string, run: string | null) => showJobFor(api.connection, task, url, run),
  };
  const reg = (id: string, fn: (...args: never[]) => unknown) => host.command(id, reporting(fn));

  // Returns the number of stored items (every type), as the first version of the command did.
  reg('crawlStudio.openResults', async (target?: unknown, view?: unknown) => {
    const task = await taskFor(target, 'Task whose results to open');
    if (!task) return undefined;
    const initial = initialView(view);
    const p = ResultsPanel.open(context, api, actions, task, undefined, initial ?? undefined);
    if (initial) {
      // A view asked for without a change filter (Find URL's item) shows stored items, whatever the panel showed.
      // Its columns and field quality stay as the user left them.
      const { hidden, showQuality } = p.state.view;
      await p.show({ ...withoutChangeFilter(p.state.view), ...initial, hidden, showQuality });
    }
    return p.storedCount();
  });

  reg('crawlStudio.findUrl', async (url?: unknown, target?: unknown) => {
    const task = await taskFor(target, 'Task to search');
    if (!task) return undefined;
    const text =
      typeof url === 'string'
        ? url
        : await vscode.window.showInputBox({
            title: `Find URL in '${task.name}'`,
            prompt: 'Where is this URL in the crawl, and why?',
            placeHolder: 'https://…',
            ignoreFocusOut: true, // the URL is often copied from elsewhere
            validateInput: (v) => (v.trim() ? null : 'A URL'),
          });
    if (!text) return undefined;
    const r = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Window, title: `Finding ${text}…` },
      () => searchUrl(api.connection, task, text),
    );
    // Not awaited: the command answers now; the list stays open for the person.
    void showFindings(api.connection, task, r);
    return r;
  });

  host.serializer(RESULTS_VIEW_TYPE, {
    deserializeWebviewPanel(panel: vscode.WebviewPanel, state: unknown) {
      const task = restoredTask(state);
      if (!task) panel.dispose();
      else
        ResultsPanel.open(
          context,
          api,
          actions,
          task,
          panel,
          isRecord(state) && isViewState(state.view) ? state.view : undefined,
        );
      return Promise.resolve();
    },
  });

  // Test hooks (testHooks.ts): registered only when the extension host runs tests.
  if (testHooksEnabled(context)) {
    reg('crawlStudio.results.testState', () =>
      [...ResultsPanel.panels.values()].map((p) => ({
        task: p.task.name,
        file: p.task.file,
        view: p.state.view,
        visible: p.panel.visible,
        lastPosted: Object.fromEntries(p.lastPosted),
      })),
    );
    reg(
      'crawlStudio.results.testMessage',
      (file: unknown, message: unknown) => panelFor(file)?.receive(message) ?? false,
    );
    reg('crawlStudio.results.testExport', async (file: unknown, format: unknown, path: unknown) => {
      const p = panelFor(file);
      if (!p || !['csv', 'jsonl', 'json'].includes(String(format)) || typeof path !== 'string' || !writableByHook(path))
        return undefined;
      return p.exportTo(format as ExportFormat, path);
    });
  }

  registerDashboard(context, api, host);
}

function panelFor(file: unknown): ResultsPanel | undefined {
  if (typeof file !== 'string') return undefined;
  return ResultsPanel.panels.get(file) ?? [...ResultsPanel.panels.values()].find((p) => p.task.name === file);
}

/** The test hook writes only inside the workspace or the temp folder. */
function writableByHook(path: string): boolean {
  const abs = resolve(path);
  const roots = [tmpdir(), ...(vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath)].map((r) =>
    existsSync(r) ? realpathSync(r) : r,
  );
  const dir = existsSync(dirname(abs)) ? realpathSync(dirname(abs)) : dirname(abs);
  return roots.some((r) => dir === r || dir.startsWith(r + sep));
}

function initialView(v: unknown): ResultsViewState | null {
  if (!isRecord(v)) return null;
  const itemType = typeof v.itemType === 'string' ? v.itemType : null;
  const filters = isRecord(v.filters)
    ? Object.fromEntries(Object.entries(v.filters).filter((e): e is [string, string] => typeof e[1] === 'string'))
    : {};
  // A run's changes (the dashboard's "Show changes"): the change filter and its run.
  const changes = CHANGE_FILTERS.find((c) => c === v.changes);
  const changeRun = typeof v.changeRun === 'string' && v.changeRun.length <= 200 ? v.changeRun : undefined;
  return {
    ...EMPTY_VIEW,
    hidden: [...DEFAULT_HIDDEN],
    itemType,
    filters,
    ...(changes ? { changes } : {}),
    ...(changes && changeRun ? { changeRun } : {}),
  };
}

function restoredTask(state: unknown): CrawlTask | null {
  if (!isRecord(state) || typeof state.file !== 'string' || !isTaskPath(state.file) || !existsSync(state.file))
    return null;
  return loadTask(vscode.Uri.file(state.file));
}

function loadTask(uri: vscode.Uri): CrawlTask | null {
  const open = vscode.workspace.textDocuments.find((d) => d.uri.fsPath === uri.fsPath);
  if (open) return parseTaskText(open.getText(), uri.fsPath).task;
  try {
    return parseTaskText(readFileSync(uri.fsPath, 'utf8'), uri.fsPath).task;
  } catch {
    return null;
  }
}

/** The view without its change filter (which run's added, changed or removed items it shows). */
function withoutChangeFilter(view: ResultsViewState): ResultsViewState {
  const kept: { -readonly [K in keyof ResultsViewState]: ResultsViewState[K] } = { ...view };
  delete kept.changes;
  delete kept.changeRun;
  return kept;
}
