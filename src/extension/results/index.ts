import * as vscode from 'vscode';
import type { CrawlStudioApi } from '../extension';
import { DASHBOARD_VIEW_TYPE } from '../dashboard/protocol';
import type { LazyHost } from './lazyHost';
import { RESULTS_VIEW_TYPE } from './protocol';

// The results view, the dashboard and Find URL at activation: command ids and panel serializers only (so panels
// still come back after a reload). Their code — the stores, BullMQ, the query layer — loads on first use.

const COMMAND_IDS = [
  'crawlStudio.openResults',
  'crawlStudio.findUrl',
  'crawlStudio.openDashboard',
  // Test hooks (not contributed).
  'crawlStudio.results.testState',
  'crawlStudio.results.testMessage',
  'crawlStudio.results.testExport',
  'crawlStudio.dashboard.testState',
  'crawlStudio.dashboard.testMessage',
];

export function registerResults(context: vscode.ExtensionContext, api: CrawlStudioApi): void {
  const handlers = new Map<string, (...args: unknown[]) => unknown>();
  const serializers = new Map<string, vscode.WebviewPanelSerializer>();
  const host: LazyHost = {
    command: (id, handler) => {
      handlers.set(id, handler);
      // A handler this list does not know yet still works, registered when the module loads.
      if (!COMMAND_IDS.includes(id)) context.subscriptions.push(vscode.commands.registerCommand(id, handler));
    },
    serializer: (viewType, s) => serializers.set(viewType, s),
  };
  let loading: Promise<void> | null = null;
  const load = () => (loading ??= import('./results').then((m) => m.activateResults(context, api, host)));
  for (const id of COMMAND_IDS) {
    context.subscriptions.push(
      vscode.commands.registerCommand(id, async (...args: unknown[]) => {
        await load();
        return handlers.get(id)?.(...args);
      }),
    );
  }
  for (const viewType of [RESULTS_VIEW_TYPE, DASHBOARD_VIEW_TYPE]) {
    context.subscriptions.push(
      vscode.window.registerWebviewPanelSerializer(viewType, {
        async deserializeWebviewPanel(panel, state) {
          await load();
          await serializers.get(viewType)?.deserializeWebviewPanel(panel, state);
        },
      }),
    );
  }
}
