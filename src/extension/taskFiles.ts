import * as vscode from 'vscode';
import type { CrawlTask } from '../core/task/model';
import { engine } from './lazy';

// Task files: which files they are, and which one a command is about. Light enough to load at activation (the
// parser comes through engine() on first use).

/** Every task file of a workspace. */
export const TASK_GLOB = '**/*.crawl.{yaml,yml}';
export const TASK_FILES: vscode.DocumentSelector = [{ pattern: TASK_GLOB }];
const TASK_PATH = /\.crawl\.ya?ml$/;

export function isTaskPath(path: string): boolean {
  return TASK_PATH.test(path);
}

export function isTaskDocument(doc: vscode.TextDocument): boolean {
  return isTaskPath(doc.uri.path);
}

/** The active editor's document when it is a task file. */
export function activeTaskDocument(): vscode.TextDocument | undefined {
  const doc = vscode.window.activeTextEditor?.document;
  return doc && isTaskDocument(doc) ? doc : undefined;
}

export interface PickOptions {
  /** At most this many files are offered (default 200). */
  readonly limit?: number;
  /** Shown when the workspace has no task file (default: nothing shown). */
  readonly whenNone?: string;
}

/** The workspace's only task file, or one the person picks; undefined when there is none or they cancel. */
export async function pickTaskFile(placeHolder: string, opts: PickOptions = {}): Promise<vscode.Uri | undefined> {
  const files = await vscode.workspace.findFiles(TASK_GLOB, '**/node_modules/**', opts.limit ?? 200);
  if (files.length === 0) {
    if (opts.whenNone) void vscode.window.showInformationMessage(opts.whenNone);
    return undefined;
  }
  if (files.length === 1) return files[0];
  const pick = await vscode.window.showQuickPick(
    files.map((f) => ({ label: vscode.workspace.asRelativePath(f), uri: f })),
    { placeHolder },
  );
  return pick?.uri;
}

/**
 * The task file a command argument names: a URI, a task file path, or a Queue Explorer queue (its task file,
 * as a QueueNode or the plain object a webview or test passes).
 */
export function taskFileOf(target: unknown): vscode.Uri | undefined {
  if (target instanceof vscode.Uri) return target;
  if (typeof target === 'string' && isTaskPath(target)) return vscode.Uri.file(target);
  if (isQueue(target)) return vscode.Uri.file(target.snapshot.file);
  if (isTaskFileRow(target)) return target.uri;
  return undefined;
}

/** A Queue Explorer row of a task file that has no queue yet (explorer/queueTree.ts TaskFileNode). */
function isTaskFileRow(v: unknown): v is { kind: 'taskFile'; uri: vscode.Uri } {
  return (
    typeof v === 'object' &&
    v !== null &&
    (v as { kind?: unknown }).kind === 'taskFile' &&
    (v as { uri?: unknown }).uri instanceof vscode.Uri
  );
}

function isQueue(v: unknown): v is { kind: 'queue'; snapshot: { file: string } } {
  if (typeof v !== 'object' || v === null) return false;
  const r = v as { kind?: unknown; snapshot?: unknown };
  return (
    r.kind === 'queue' &&
    typeof r.snapshot === 'object' &&
    r.snapshot !== null &&
    typeof (r.snapshot as { file?: unknown }).file === 'string'
  );
}

/** The task in a task file (the editor's text when it is open, unsaved edits included); null when invalid. */
export async function readTask(uri: vscode.Uri): Promise<CrawlTask | null> {
  const doc = await vscode.workspace.openTextDocument(uri);
  const { parseTask } = await engine();
  return parseTask(doc.getText(), uri.fsPath).task;
}

/**
 * The task a command is about: the task file its argument names (taskFileOf), else the active task editor's,
 * else the workspace's only task file or one the person picks. Null (and the person told why) when there is
 * none or it has errors.
 */
export async function taskFor(target: unknown, placeHolder: string): Promise<CrawlTask | null> {
  const uri = taskFileOf(target) ?? activeTaskDocument()?.uri ?? (await pickTaskFile(placeHolder));
  if (!uri) {
    void vscode.window.showInformationMessage('Open a *.crawl.yaml task file first.');
    return null;
  }
  const task = await readTask(uri);
  if (!task)
    void vscode.window.showErrorMessage(`${vscode.workspace.asRelativePath(uri)} has errors: see the Problems panel.`);
  return task;
}
