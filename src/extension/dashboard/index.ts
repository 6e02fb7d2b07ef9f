import * as vscode from 'vscode';
import { existsSync } from 'node:fs';
import type { CrawlStudioApi } from '../api';
import { reporting } from '../errors';
import type { LazyHost } from '../lazy';
import { isRecord } from '../results/validate';
import { isTaskPath, taskFor } from '../taskFiles';
import { testHooksEnabled } from '../testHooks';
import { DashboardPanel } from './panel';
import { DASHBOARD_VIEW_TYPE } from './protocol';

/** Registers "Open Dashboard", its serializer (panels come back after a reload) and its test hooks. */
export function registerDashboard(context: vscode.ExtensionContext, api: CrawlStudioApi, host: LazyHost): void {
  const reg = (id: string, fn: (...args: never[]) => unknown) => host.command(id, reporting(fn));

  reg('crawlStudio.openDashboard', async (target?: unknown) => {
    const task = await taskFor(target, 'Task whose dashboard to open');
    if (!task) return undefined;
    await api.connection.get();
    DashboardPanel.open(context, api, task);
    return { task: task.name };
  });

  host.serializer(DASHBOARD_VIEW_TYPE, {
    async deserializeWebviewPanel(panel: vscode.WebviewPanel, state: unknown) {
      const file =
        isRecord(state) && typeof state.file === 'string' && isTaskPath(state.file) && existsSync(state.file)
          ? state.file
          : null;
      const task = file ? await taskFor(vscode.Uri.file(file), '') : null;
      if (!task) {
        panel.dispose();
        return;
      }
      DashboardPanel.open(context, api, task, panel);
    },
  });

  // Test hooks (testHooks.ts): registered only when the extension host runs tests.
  if (testHooksEnabled(context)) {
    reg('crawlStudio.dashboard.testState', () =>
      [...DashboardPanel.panels.values()].map((p) => ({
        task: p.task.name,
        file: p.task.file,
        visible: p.panel.visible,
        lastPosted: Object.fromEntries(p.lastPosted),
      })),
    );
    reg('crawlStudio.dashboard.testMessage', (file: unknown, message: unknown) => {
      const p = [...DashboardPanel.panels.values()].find((x) => x.task.file === file || x.task.name === file);
      return p ? p.receive(message) : false;
    });
  }
}
