import * as vscode from 'vscode';
import type { CrawlStudioApi } from '../../src/extension/extension';

// Shared by the extension-host suites: the extension's id, and pointing it at a suite's own Redis and worker
// settings (user settings, so any workspace may be open) and taking them back afterwards.

export const EXTENSION_ID = 'crawl-studio.crawl-studio';

/** Sets `settings` (crawlStudio.*) for the user, activates the extension and drops any connection it had. */
export async function activateWith(settings: Readonly<Record<string, unknown>>): Promise<CrawlStudioApi> {
  const cfg = vscode.workspace.getConfiguration('crawlStudio');
  for (const [key, value] of Object.entries(settings)) await cfg.update(key, value, vscode.ConfigurationTarget.Global);
  const api = (await vscode.extensions.getExtension(EXTENSION_ID)!.activate()) as CrawlStudioApi;
  await api.connection.reset();
  return api;
}

/** Takes back the settings `activateWith` set and drops the connection made with them. */
export async function restoreSettings(api: CrawlStudioApi | undefined, keys: readonly string[]): Promise<void> {
  const cfg = vscode.workspace.getConfiguration('crawlStudio');
  for (const key of keys) await cfg.update(key, undefined, vscode.ConfigurationTarget.Global);
  await api?.connection.reset();
}

/** Polls `fn` every 200 ms until it returns something truthy, and returns that; fails naming `what` after `timeoutMs`. */
export async function until<T>(
  what: string,
  fn: () => Promise<T | undefined | false | null> | T | undefined | false | null,
  timeoutMs = 60_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    const v = await fn();
    if (v) return v;
    last = v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what} (last: ${JSON.stringify(last)})`);
    await new Promise((r) => setTimeout(r, 200));
  }
}
