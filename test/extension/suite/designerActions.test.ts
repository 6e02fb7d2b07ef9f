import * as assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as vscode from 'vscode';
import type { PanelSnapshot } from '../../../src/extension/designer/previewPanel';
import { ENTRIES, serveActionSite, type ActionSite } from '../../support/actionSite';

// The designer's preview of a rendered rule with `browser.actions` (issue 30), in a real VS Code with real Chromium:
// the preview runs the actions as a worker would (the feed scrolled to its 60 entries, the analysis sees them all)
// and its status lists each step.

const C = {
  open: 'crawlStudio.designer.openPreview',
  state: 'crawlStudio.designer._state',
};

async function until<T>(
  what: string,
  probe: () => T | Promise<T>,
  timeoutMs: number,
  explain: () => Promise<unknown>,
): Promise<NonNullable<T>> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const last = await probe();
    if (last) return last;
    if (Date.now() > end)
      throw new Error(`timed out waiting for ${what}: ${JSON.stringify(await explain()).slice(0, 800)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('crawl designer: page actions in the preview (real Chromium)', function () {
  this.timeout(120_000);
  let site: ActionSite;
  let dir: string;
  let uri: vscode.Uri;
  const snap = () => vscode.commands.executeCommand<PanelSnapshot | null>(C.state, uri);

  before(async () => {
    await vscode.extensions.getExtension('crawl-studio.crawl-studio')!.activate();
    site = await serveActionSite();
    dir = mkdtempSync(join(tmpdir(), 'cs-designer-actions-'));
    const file = join(dir, 'feed.crawl.yaml');
    writeFileSync(
      file,
      `name: feed\nstart: [${site.url}/feed]\nrules:\n  - name: feed\n    browser:\n      waitFor: { selector: .entry }\n      actions:\n        - scroll: { selector: .entry, count: ${ENTRIES} }\n    items:\n      - type: entry\n        scope: article.entry\n        key: [id]\n        fields: { id: .id, title: h2 }\n`,
    );
    uri = vscode.Uri.file(file);
    await vscode.window.showTextDocument(await vscode.workspace.openTextDocument(uri));
  });

  after(async () => {
    await vscode.commands.executeCommand('workbench.action.closeAllEditors');
    await site?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("runs the rule's actions on the rendered page and lists each step", async () => {
    await vscode.commands.executeCommand(C.open, uri);
    const shown = await until(
      'the scrolled page analysed',
      async () => {
        const x = await snap();
        return x?.state.page?.actions && x.state.analysis?.items[0]?.rows.length ? x : null;
      },
      60_000,
      async () => {
        const x = await snap();
        return (
          x && {
            browser: x.state.browser,
            loading: x.state.loading,
            pageError: x.state.pageError,
            actions: x.state.page?.actions,
            rows: x.state.analysis?.items[0]?.rows.length,
          }
        );
      },
    );
    assert.equal(
      shown.state.analysis!.items[0]!.rows.length,
      ENTRIES,
      'the analysis sees every entry the scrolls loaded',
    );
    assert.equal(shown.state.page!.actions!.length, 1);
    assert.match(shown.state.page!.actions![0]!, /^scroll \(\.entry until 60\): 60 elements in /);
  });
});
