import type * as vscode from 'vscode';
import type { CrawlStudioApi } from '../api';
import { DASHBOARD_VIEW_TYPE } from '../dashboard/protocol';
import { registerLazy } from '../lazy';
import { testHooksEnabled } from '../testHooks';
import { RESULTS_VIEW_TYPE } from './protocol';

// The results view, the dashboard and Find URL at activation: command ids and panel serializers only (so panels
// still come back after a reload). Their code — the stores, BullMQ, the query layer — loads on first use.

const COMMAND_IDS = ['crawlStudio.openResults', 'crawlStudio.findUrl', 'crawlStudio.openDashboard'];

/** Test hooks (see testHooks.ts). */
const TEST_COMMAND_IDS = [
  'crawlStudio.results.testState',
  'crawlStudio.results.testMessage',
  'crawlStudio.results.testExport',
  'crawlStudio.dashboard.testState',
  'crawlStudio.dashboard.testMessage',
];

export function registerResults(context: vscode.ExtensionContext, api: CrawlStudioApi): void {
  registerLazy(context, {
    commands: testHooksEnabled(context) ? [...COMMAND_IDS, ...TEST_COMMAND_IDS] : COMMAND_IDS,
    viewTypes: [RESULTS_VIEW_TYPE, DASHBOARD_VIEW_TYPE],
    load: (host) => import('./results').then((m) => m.activateResults(context, api, host)),
  });
}
