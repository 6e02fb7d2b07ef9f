import * as vscode from 'vscode';
import { DEMO_PORT, DEMO_SITE, serveSite, type SiteServer } from '../demo/site';

// "Open the Demo Shop": the sample bookshop the walkthrough practises on, served by the extension itself on
// 127.0.0.1 while the window is open. The walkthrough told new users to run `crawl-studio serve-demo` in a
// terminal, a program the .vsix does not put on PATH (issue 23, item 8).

class DemoShop implements vscode.Disposable {
  private site: Promise<SiteServer> | null = null;

  /** The shop's URL, starting it on first use (on its usual port when free, else on any). */
  async url(): Promise<string> {
    this.site ??= serveSite(DEMO_SITE, DEMO_PORT).catch(() => serveSite(DEMO_SITE, 0));
    try {
      return (await this.site).url;
    } catch (err) {
      this.site = null;
      throw err;
    }
  }

  dispose(): void {
    void this.site?.then(
      (s) => s.close(),
      () => undefined,
    );
  }
}

export function registerDemoShop(context: vscode.ExtensionContext): void {
  const shop = new DemoShop();
  context.subscriptions.push(
    shop,
    vscode.commands.registerCommand('crawlStudio.openDemoShop', async () => {
      const url = await shop.url();
      // Its first list page: what a task file starts from (New Task File proposes follow rules from it).
      const start = `${url}/catalogue/page-1.html`;
      const newTask = vscode.l10n.t('New Task File for It');
      const browse = vscode.l10n.t('Open in Browser');
      void vscode.window
        .showInformationMessage(
          vscode.l10n.t('The demo bookshop runs at {0}/ while this window is open: crawl it to practise.', url),
          newTask,
          browse,
        )
        .then((a) => {
          if (a === newTask)
            return vscode.commands.executeCommand('crawlStudio.designer.newTaskFile', {
              name: 'books',
              start,
              preview: true,
            });
          if (a === browse) return vscode.env.openExternal(vscode.Uri.parse(`${url}/`));
          return undefined;
        });
      return { url, start };
    }),
  );
}
