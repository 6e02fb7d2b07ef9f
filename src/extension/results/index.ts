import * as vscode from 'vscode';
import { dirname } from 'node:path';
import { Writable } from 'node:stream';
import { parseTask } from '../../core/task/parse';
import { exportItems, openStore } from '../../store';
import { storeUrlFor } from '../../worker/storage';
import type { CrawlStudioApi } from '../extension';

/**
 * Registers the results and crawl-health views. For now "Open Results" shows the task's stored items as JSON;
 * the results webview replaces it.
 */
export function registerResults(context: vscode.ExtensionContext, api: CrawlStudioApi): void {
  void api;
  context.subscriptions.push(
    vscode.commands.registerCommand('crawlStudio.openResults', async (uri?: vscode.Uri) => {
      const file = uri ?? vscode.window.activeTextEditor?.document.uri;
      if (!file) return undefined;
      const doc = await vscode.workspace.openTextDocument(file);
      const task = parseTask(doc.getText(), file.fsPath).task;
      if (!task) {
        void vscode.window.showErrorMessage(`${vscode.workspace.asRelativePath(file)} has errors: see the Problems panel.`);
        return undefined;
      }
      const store = await openStore(storeUrlFor(task), { task: task.name, cwd: dirname(task.file) });
      try {
        let text = '';
        const out = new Writable({ write: (chunk, _enc, cb) => ((text += String(chunk)), cb()) });
        const res = await exportItems(store, { format: 'json', out });
        await vscode.window.showTextDocument(await vscode.workspace.openTextDocument({ language: 'json', content: text }), { preview: true });
        return res.items;
      } finally {
        await store.close();
      }
    }),
  );
}
