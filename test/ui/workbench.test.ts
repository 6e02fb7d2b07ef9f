import * as assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
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
    assert.match(await activeTab(page).innerText(), /Untitled-1/);
    // Monaco draws spaces as no-break spaces.
    assert.equal((await activeEditorLines(page).innerText()).replace(/\u00a0/g, ' ').trim(), 'typed by the UI test');
    await wb.screenshot('ui/untitled-editor.png');
  });

  it('keeps a crawl secret typed into Set Crawl Secret…, its value in a password box', async () => {
    const { page } = wb;
    await openCommandPalette(page, 'Crawl Studio: Set Crawl Secret…');
    await paletteRow(page, 'Crawl Studio: Set Crawl Secret…').click();
    const widget = quickInput(page);
    const input = widget.locator('input.input').first();
    await widget.getByText('Variable a task file uses').first().waitFor({ timeout: 15_000 });
    await input.fill('CRAWL_STUDIO_UI_TOKEN');
    await input.press('Enter');
    await widget.getByText('Value of CRAWL_STUDIO_UI_TOKEN').first().waitFor({ timeout: 15_000 });
    // A secret is never shown as it is typed.
    assert.equal(await input.getAttribute('type'), 'password');
    await input.fill('typed-secret');
    await wb.screenshot('ui/set-crawl-secret.png');
    await input.press('Enter');
    const kept = page.locator('.notification-toast', { hasText: 'CRAWL_STUDIO_UI_TOKEN kept in Secret Storage' });
    await kept.first().waitFor({ timeout: 15_000 });
    assert.doesNotMatch(await kept.first().innerText(), /typed-secret/);
  });

  it('opens the task file from the explorer', async () => {
    const { page } = wb;
    await explorerItem(page, 'demo.crawl.yaml').click();
    await activeTab(page).filter({ hasText: 'demo.crawl.yaml' }).waitFor({ state: 'visible', timeout: 15_000 });
    await activeEditorLines(page).filter({ hasText: 'name: demo' }).waitFor({ state: 'visible' });
    assert.match(await activeTab(page).innerText(), /demo\.crawl\.yaml/);
    // The lines shown are the file's (Monaco draws spaces as no-break spaces, and lines in its own order).
    const shown = (await activeEditorLines(page).innerText())
      .replace(/\u00a0/g, ' ')
      .split('\n')
      .map((l) => l.trimEnd())
      .filter(Boolean);
    const onDisk = readFileSync(join(fixtureWorkspace(), 'demo.crawl.yaml'), 'utf8').split('\n');
    assert.ok(
      shown.includes('name: demo') && shown.every((l) => onDisk.includes(l)),
      `the editor shows the file: ${shown.slice(0, 4).join(' | ')}`,
    );
    // A second command through the helper: hide and show the side bar.
    await runCommand(page, 'View: Toggle Primary Side Bar Visibility');
    await page.locator('.part.sidebar').waitFor({ state: 'hidden' });
    assert.equal(await page.locator('.part.sidebar').isVisible(), false);
    await runCommand(page, 'View: Toggle Primary Side Bar Visibility');
    await page.locator('.part.sidebar').waitFor({ state: 'visible' });
    assert.equal(await page.locator('.part.sidebar').isVisible(), true);
    await wb.screenshot('ui/demo-task-open.png');
  });
});
