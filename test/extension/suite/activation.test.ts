import * as assert from 'node:assert/strict';
import * as vscode from 'vscode';

const EXTENSION_ID = 'crawl-studio.crawl-studio';

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

  it('opened the fixture workspace', () => {
    const folders = vscode.workspace.workspaceFolders ?? [];
    assert.equal(folders.length, 1, `workspace folders: ${folders.map((f) => f.uri.toString()).join(', ')}`);
    assert.match(folders[0]!.uri.path, /fixtures\/workspace$/);
  });
});
