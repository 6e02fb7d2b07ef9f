import * as vscode from 'vscode';
import type { CrawlTask } from '../core/task/model';
import { credentialVariables } from '../core/task/secrets';
import { variableKind } from '../core/task/variables';
import { testHooksEnabled } from './testHooks';

// Login, proxy and API credentials (headers, request bodies) kept in VS Code's Secret Storage, for crawls started from the editor: a task file
// names them as ${CRAWL_STUDIO_*}, and the workers the editor starts get their values by environment, the way they
// get the Redis password (never on a command line, never in Redis). A variable set in the editor's own environment
// is used when Secret Storage has none. Workers started elsewhere (crawl-studio worker) read their own environment.

const PREFIX = 'crawlStudio.env.';
const NAME = /^CRAWL_STUDIO_[A-Z0-9_]+$/;
/** Crawl Studio's own settings (its Redis, its browser) are never a task file's: core/task/variables.ts. */
const RESERVED =
  "one of Crawl Studio's own settings, which a task file may never use: pick a name of your own (the Redis password goes in Connect to Redis…)";

export class CrawlSecrets {
  constructor(private readonly secrets: vscode.SecretStorage) {}

  /** The values Secret Storage holds for the variables the task's login and proxies use. */
  async envFor(task: CrawlTask): Promise<Record<string, string>> {
    const env: Record<string, string> = {};
    for (const name of credentialVariables(task)) {
      const value = await this.secrets.get(PREFIX + name);
      if (value !== undefined) env[name] = value;
    }
    return env;
  }

  /** Asks for a variable's name and value and keeps them; an empty value forgets the variable. */
  async set(name?: string): Promise<void> {
    const chosen =
      name ??
      (await vscode.window.showInputBox({
        prompt:
          'Variable a task file uses as ${NAME} in a login, a proxy, headers or a request body (only CRAWL_STUDIO_* names expand)',
        value: 'CRAWL_STUDIO_',
        validateInput: (v) =>
          !NAME.test(v)
            ? 'A name such as CRAWL_STUDIO_PASSWORD: CRAWL_STUDIO_ then capitals, digits or _'
            : variableKind(v) === 'reserved'
              ? RESERVED
              : null,
      }));
    if (!chosen) return;
    if (!NAME.test(chosen)) throw new Error(`'${chosen}' is not a CRAWL_STUDIO_* variable name`);
    if (variableKind(chosen) === 'reserved') throw new Error(`${chosen}: ${RESERVED}`);
    const value = await vscode.window.showInputBox({
      prompt: `Value of ${chosen} (kept in VS Code Secret Storage; empty to forget it)`,
      password: true,
      // Open while the person copies the value from a password manager.
      ignoreFocusOut: true,
    });
    if (value === undefined) return;
    if (value === '') await this.secrets.delete(PREFIX + chosen);
    else await this.secrets.store(PREFIX + chosen, value);
    void vscode.window.showInformationMessage(
      value === ''
        ? `${chosen} forgotten.`
        : `${chosen} kept in Secret Storage; crawls started here pass it to their workers.`,
    );
  }
}

export function registerCrawlSecrets(context: vscode.ExtensionContext): CrawlSecrets {
  const secrets = new CrawlSecrets(context.secrets);
  if (testHooksEnabled(context)) {
    // Test-only (testHooks.ts): the value a person would type into Set Crawl Secret's password box.
    context.subscriptions.push(
      vscode.commands.registerCommand('crawlStudio._setCrawlSecretForTest', async (name: string, value: string) => {
        if (!NAME.test(name)) throw new Error(`'${name}' is not a CRAWL_STUDIO_* variable name`);
        await (value === '' ? context.secrets.delete(PREFIX + name) : context.secrets.store(PREFIX + name, value));
      }),
    );
  }
  context.subscriptions.push(
    vscode.commands.registerCommand('crawlStudio.setCrawlSecret', async (name?: string) => {
      try {
        await secrets.set(typeof name === 'string' ? name : undefined);
      } catch (err) {
        void vscode.window.showErrorMessage(err instanceof Error ? err.message : String(err));
      }
    }),
  );
  return secrets;
}
