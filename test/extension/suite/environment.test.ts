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
    assert.ok(major! > 1 || (major === 1 && minor! >= 100), `VS Code ${vscode.version}`);
  });
});
