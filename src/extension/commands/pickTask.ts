import * as vscode from 'vscode';
import { activeTaskDocument, pickTaskFile as pick } from '../taskFiles';

// Which task file a command acts on when it was given none: the active task editor's, or the workspace's only or
// picked one.

/** The task file to act on: the one given, the active task editor's, or the workspace's only or picked one. */
export async function taskDocument(uri?: vscode.Uri): Promise<vscode.TextDocument | undefined> {
  if (uri) return vscode.workspace.openTextDocument(uri);
  const active = activeTaskDocument();
  if (active) return active;
  const picked = await pickTaskFile(vscode.l10n.t('Task file to crawl'));
  return picked ? vscode.workspace.openTextDocument(picked) : undefined;
}

export function pickTaskFile(placeHolder: string): Promise<vscode.Uri | undefined> {
  return pick(placeHolder, {
    whenNone: vscode.l10n.t(
      'No *.crawl.yaml task file in this workspace. Create one with "Crawl Studio: New Task File".',
    ),
  });
}
