import * as vscode from 'vscode';
import { DEFAULT_CONCURRENCY, defaultWorkers, editorScaling } from '../worker/args';

// Settings as the extension reads them. In an untrusted workspace, workspace-level values of settings that
// point at machines or programs are ignored: a cloned repository must not be able to aim the editor at a Redis
// server or a binary of its choosing.

const SECTION = 'crawlStudio';

/** Refused because the workspace is not trusted; the message says what was refused and why. */
export class UntrustedWorkspaceError extends Error {
  override readonly name = 'UntrustedWorkspaceError';
}

/** Throws `refusal` as an UntrustedWorkspaceError unless the workspace is trusted. */
export function requireTrust(refusal: string): void {
  if (!vscode.workspace.isTrusted) throw new UntrustedWorkspaceError(refusal);
}

function trustedValue<T>(key: string): T | undefined {
  const cfg = vscode.workspace.getConfiguration(SECTION);
  if (vscode.workspace.isTrusted) return cfg.get<T>(key);
  const inspected = cfg.inspect<T>(key);
  return inspected?.globalValue ?? inspected?.defaultValue;
}

/**
 * The `crawlStudio.workers` setting, a number or unset. Up to 0.1.0 the autoscale switch was `crawlStudio.workers.autoscale`,
 * a key under `crawlStudio.workers`: VS Code then read `workers` as the object `{ autoscale: true }` (a worker count
 * of NaN), and with both set it dropped the switch ("Ignoring crawlStudio.workers.autoscale as crawlStudio.workers
 * is 3"). It is `crawlStudio.autoscale` now; a settings file that still has the old key is read as before.
 */
function workersSetting(): number | null {
  const v = vscode.workspace.getConfiguration(SECTION).get<unknown>('workers', null);
  return typeof v === 'number' ? v : null;
}

function legacyAutoscale(): boolean {
  const v = vscode.workspace.getConfiguration(SECTION).get<unknown>('workers', null);
  return typeof v === 'object' && v !== null && (v as { autoscale?: unknown }).autoscale === true;
}

export const settings = {
  redisUrl: (): string => (trustedValue<string>('redisUrl') ?? '').trim(),
  redisServerPath: (): string => (trustedValue<string>('redisServerPath') ?? '').trim(),
  // A binary the workers run, so a workspace may name it only once trusted (as redisServerPath).
  browserPath: (): string => (trustedValue<string>('browserPath') ?? '').trim(),
  // Unset (null): one per two CPU cores, as the CLI's default.
  workers: (): number => workersSetting() ?? defaultWorkers(),
  concurrency: (): number => vscode.workspace.getConfiguration(SECTION).get<number>('concurrency', DEFAULT_CONCURRENCY),
  /** Workers that size themselves (worker/args.ts editorScaling): the same mechanism as `--workers auto --concurrency auto`. */
  scaling: () => {
    const cfg = vscode.workspace.getConfiguration(SECTION);
    return editorScaling(
      cfg.get<boolean>('autoscale', false) || legacyAutoscale(),
      settings.workers(),
      settings.concurrency(),
      workersSetting(),
    );
  },
  refreshIntervalMs: (): number => vscode.workspace.getConfiguration(SECTION).get<number>('refreshInterval', 1000),
};

export function onSettingsChange(listener: (e: vscode.ConfigurationChangeEvent) => void): vscode.Disposable {
  return vscode.workspace.onDidChangeConfiguration((e) => {
    if (e.affectsConfiguration(SECTION)) listener(e);
  });
}
