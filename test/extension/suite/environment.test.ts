import * as assert from 'node:assert/strict';
import * as vscode from 'vscode';

// The runners pass settings to the tests through the environment (on code-server the extension host inherits
// code-server's; with @vscode/test-electron through extensionTestsEnv): REDIS URLs and the like travel this way.
describe('test environment', () => {
  it('reaches the extension host', () => {
    assert.ok(
      ['code-server', 'electron'].includes(process.env.CRAWL_STUDIO_TEST_HOST ?? ''),
      `CRAWL_STUDIO_TEST_HOST=${process.env.CRAWL_STUDIO_TEST_HOST} (run through scripts/code-server/run-extension-tests.mjs)`,
    );
  });

  it('runs in the VS Code version the extension targets', () => {
    const [major, minor] = vscode.version.split('.').map(Number);
    assert.ok(major! > 1 || (major === 1 && minor! >= 101), `VS Code ${vscode.version}`);
  });

  // The embedded store is node:sqlite (issue 22, item 1): the extension host itself must provide it.
  it('runs on a Node with node:sqlite (22.13 or newer), and it opens a WAL database', () => {
    const [major, minor] = process.versions.node.split('.').map(Number);
    assert.ok(major! > 22 || (major === 22 && minor! >= 13), `extension host Node ${process.version}`);
    const { DatabaseSync } = require('node:sqlite') as typeof import('node:sqlite');
    const db = new DatabaseSync(':memory:');
    try {
      assert.equal((db.prepare('SELECT sqlite_version() AS v').get() as { v: string }).v.split('.')[0], '3');
    } finally {
      db.close();
    }
  });
});
