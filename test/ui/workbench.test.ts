import * as assert from 'node:assert/strict';
import { fixtureWorkspace, openWorkbench, type Workbench } from '../extension/harness';
import {
  activeEditorLines,
  activeTab,
  explorerItem,
  openCommandPalette,
  paletteRow,
  quickInput,
  runCommand,
  waitForWorkbench,
  keepFailureArtifacts,
} from './support/workbench';

// UI tests drive the real VS Code web workbench (code-server + headless Chromium) with Playwright.
// Run: node esbuild.mjs && npx mocha --config test/ui/.mocharc.json
// (its own config: the root .mocharc.json's spec is the unit/integration suite, which mocha would add otherwise)
// Screenshots go to test-artifacts/ui/ (a failed test also leaves <title>.png and <title>.log there).
describe('workbench (UI)', function () {
  this.timeout(120_000);
  let wb: Workbench;

  before(async function () {
    this.timeout(180_000);
    // The extension under development is loaded too (extensionDevelopmentPath defaults to the repo root).
    wb = await openWorkbench({ workspaceFolder: fixtureWorkspace() });
  });

  afterEach(async function () {
    await keepFailureArtifacts(this, wb);
  });

  after(async () => {
    await wb?.close();
  });

  it('loads on the fixture workspace', async () => {
    await waitForWorkbench(wb.page, { file: 'demo.crawl.yaml' });
    // The window title names the dev host and the folder.
    await wb.page.locator('.window-title, .command-center').first().waitFor({ state: 'visible' });
    const title = await wb.page.title();
    assert.match(title, /workspace/, `title: ${title}`);
    await wb.screenshot('ui/workbench-loaded.png');
  });

  it('runs a command from the command palette', async () => {
    const { page } = wb;
    // Give the keyboard to the workbench, then look the command up in the palette.
    await page.locator('.part.editor').click();
    await openCommandPalette(page, 'File: New Untitled Text File');
    const row = paletteRow(page, 'File: New Untitled Text File');
    await row.waitFor({ state: 'visible' });
    await wb.screenshot('ui/command-palette.png');
    await row.click();
    await quickInput(page).waitFor({ state: 'hidden' });

    await activeTab(page).filter({ hasText: 'Untitled-1' }).waitFor({ state: 'visible', timeout: 15_000 });
    await page.keyboard.type('typed by the UI test');
    await activeEditorLines(page).filter({ hasText: 'typed by the UI test' }).waitFor({ state: 'visible' });
    await wb.screenshot('ui/untitled-editor.png');
  });

  it('opens the task file from the explorer', async () => {
    const { page } = wb;
    await explorerItem(page, 'demo.crawl.yaml').click();
    await activeTab(page).filter({ hasText: 'demo.crawl.yaml' }).waitFor({ state: 'visible', timeout: 15_000 });
    await activeEditorLines(page).filter({ hasText: 'name: demo' }).waitFor({ state: 'visible' });
    // A second command through the helper: hide and show the side bar.
    await runCommand(page, 'View: Toggle Primary Side Bar Visibility');
    await page.locator('.part.sidebar').waitFor({ state: 'hidden' });
    await runCommand(page, 'View: Toggle Primary Side Bar Visibility');
    await page.locator('.part.sidebar').waitFor({ state: 'visible' });
    await wb.screenshot('ui/demo-task-open.png');
  });
});
