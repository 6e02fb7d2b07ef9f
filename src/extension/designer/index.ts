import * as vscode from 'vscode';
import { COMMANDS } from './commands';
import { isTaskDocument } from './taskFiles';

// The designer's entry at activation: only the command ids and a watch for task files. Its code (cheerio, yaml,
// ajv, the preview) loads on the first designer command or the first open task file, after activation.

export { COMMANDS };

/** What the rest of the extension uses of the designer: its task-file problems (one collection for all). */
export interface DesignerHandle {
  check(doc: vscode.TextDocument): Promise<vscode.Diagnostic[]>;
}

type Handler = (...args: never[]) => unknown;

export function registerDesigner(context: vscode.ExtensionContext): DesignerHandle {
  const handlers = new Map<string, Handler>();
  let loading: Promise<{ readonly diagnostics: { check(doc: vscode.TextDocument): Promise<vscode.Diagnostic[]> } }> | null = null;
  const load = () => (loading ??= import('./designer').then((m) => m.activateDesigner(context, (id, fn) => handlers.set(id, fn))));
  for (const id of Object.values(COMMANDS)) {
    context.subscriptions.push(
      vscode.commands.registerCommand(id, async (...args: unknown[]) => {
        await load();
        return (handlers.get(id) as (...a: unknown[]) => unknown)(...args);
      }),
    );
  }
  const loadFor = (doc: vscode.TextDocument) => {
    if (isTaskDocument(doc)) void load();
  };
  context.subscriptions.push(vscode.workspace.onDidOpenTextDocument(loadFor));
  // Task files already open: load just after activation, not during it.
  setTimeout(() => vscode.workspace.textDocuments.forEach(loadFor), 0);
  return { check: async (doc) => (await load()).diagnostics.check(doc) };
}
