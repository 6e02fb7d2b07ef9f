import * as assert from 'node:assert/strict';
import * as vscode from 'vscode';
import { EXTENSION_ID } from '../support';

describe('extension activation', () => {
  it('is installed in the extension host under its publisher.name id', () => {
    const ext = vscode.extensions.getExtension(EXTENSION_ID);
    assert.ok(ext, `${EXTENSION_ID} is not among ${vscode.extensions.all.map((e) => e.id).join(', ')}`);
  });

  it('activates', async () => {
    const ext = vscode.extensions.getExtension(EXTENSION_ID);
    assert.ok(ext);
    await ext.activate();
    assert.equal(ext.isActive, true);
  });

  it('answers crawlStudio.version with the package version', async () => {
    const ext = vscode.extensions.getExtension(EXTENSION_ID);
    assert.ok(ext);
    await ext.activate();
    const expected = (ext.packageJSON as { version: string }).version;
    assert.match(expected, /^\d+\.\d+\.\d+/);
    const version = await vscode.commands.executeCommand<string>('crawlStudio.version');
    assert.equal(version, expected);
  });

  it('registers its test hooks only because this is a test run, and contributes none of them', async () => {
    const ext = vscode.extensions.getExtension(EXTENSION_ID);
    assert.ok(ext);
    await ext.activate();
    // The hooks are registered only in ExtensionMode.Test (src/extension/testHooks.ts): seeing them proves the
    // suite runs in that mode, which the results, dashboard and designer suites rely on.
    const hooks = [
      'crawlStudio.results.testState',
      'crawlStudio.results.testMessage',
      'crawlStudio.results.testExport',
      'crawlStudio.dashboard.testState',
      'crawlStudio.dashboard.testMessage',
      'crawlStudio.designer._state',
      'crawlStudio.designer._message',
      'crawlStudio.designer._pick',
    ];
    const registered = new Set(await vscode.commands.getCommands(true));
    assert.deepEqual(
      hooks.filter((h) => !registered.has(h)),
      [],
    );
    const pkg = ext.packageJSON as {
      contributes?: { commands?: { command: string }[]; menus?: Record<string, { command?: string }[]> };
    };
    const contributed = [
      ...(pkg.contributes?.commands ?? []),
      ...Object.values(pkg.contributes?.menus ?? {}).flat(),
    ].map((c) => c.command);
    assert.deepEqual(
      contributed.filter((c) => c !== undefined && (hooks.includes(c) || /\._/.test(c))),
      [],
    );
  });

  it('opened the fixture workspace', async () => {
    const folders = vscode.workspace.workspaceFolders ?? [];
    assert.equal(folders.length, 1, `workspace folders: ${folders.map((f) => f.uri.toString()).join(', ')}`);
    const expected = process.env.CRAWL_STUDIO_TEST_WORKSPACE;
    if (expected) assert.equal(folders[0]!.uri.fsPath, expected);
    // File search goes through the host's ripgrep: a broken code-server install shows up here.
    const found = await vscode.workspace.findFiles('**/*.crawl.yaml');
    assert.deepEqual(
      found.map((u) => u.path.split('/').pop()),
      ['demo.crawl.yaml'],
    );
  });
});
