import * as vscode from 'vscode';
import { registerLazy } from '../lazy';
import { isTaskDocument } from '../taskFiles';
import { testHooksEnabled } from '../testHooks';
import { COMMANDS, PREVIEW_VIEW_TYPE, TEST_COMMANDS } from './commands';
import type { SecretSource } from './previewAccess';

// The designer's entry at activation: only the command ids and a watch for task files. Its code (cheerio, yaml,
// ajv, the preview) loads on the first designer command or the first open task file, after activation.

export { COMMANDS };

/** What the rest of the extension uses of the designer: its task-file problems (one collection for all). */
export interface DesignerHandle {
  check(doc: vscode.TextDocument): Promise<vscode.Diagnostic[]>;
}

export function registerDesigner(context: vscode.ExtensionContext, secrets?: SecretSource): DesignerHandle {
  const ids = [...Object.values(COMMANDS), ...(testHooksEnabled(context) ? Object.values(TEST_COMMANDS) : [])];
  const load = registerLazy(context, {
    commands: ids,
    viewTypes: [PREVIEW_VIEW_TYPE],
    load: (host) => import('./designer').then((m) => m.activateDesigner(context, host, secrets)),
  });
  const loadFor = (doc: vscode.TextDocument) => {
    if (isTaskDocument(doc)) void load();
  };
  context.subscriptions.push(vscode.workspace.onDidOpenTextDocument(loadFor));
  // The Browser toggle's Chromium, if it ever started, goes with the extension.
  context.subscriptions.push({ dispose: () => void import('./browserPreview').then((m) => m.closePreviewBrowser()) });
  // Task files already open: load just after activation, not during it.
  setTimeout(() => vscode.workspace.textDocuments.forEach(loadFor), 0);
  return { check: async (doc) => (await load()).diagnostics.check(doc) };
}
