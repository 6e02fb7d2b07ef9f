import * as assert from 'node:assert/strict';
import * as vscode from 'vscode';
import { EXTENSION_ID, until } from '../support';

// VS Code conventions (issue 23): `crawl-studio validate / run / test` as tasks whose problems land in the Problems
// panel through the $crawl-studio problem matcher; what the manifest declares.

describe('VS Code conventions: tasks, problem matcher, manifest', function () {
  this.timeout(120_000);

  before(async () => {
    await vscode.extensions.getExtension(EXTENSION_ID)!.activate();
  });

  it('offers validate, run and test tasks for each task file, and puts validate\'s problems in the Problems panel', async () => {
    const folder = vscode.workspace.workspaceFolders![0]!.uri;
    const broken = vscode.Uri.joinPath(folder, 'tasks-broken.crawl.yaml');
    await vscode.workspace.fs.writeFile(broken, new TextEncoder().encode('name: Bad Name\nstart: [https://example.com/]\nrules:\n  - name: list\n    follow:\n      - { selector: "a[", to: list }\n'));
    try {
      const tasks = await until('the task files\' tasks', async () => {
        const all = await vscode.tasks.fetchTasks({ type: 'crawl-studio' });
        return all.some((t) => t.name === 'validate tasks-broken.crawl.yaml') ? all : undefined;
      }, 30_000);
      const names = tasks.map((t) => t.name);
      for (const n of ['validate demo.crawl.yaml', 'run demo.crawl.yaml', 'test demo.crawl.yaml']) assert.ok(names.includes(n), names.join(', '));
      const validate = tasks.find((t) => t.name === 'validate tasks-broken.crawl.yaml')!;
      assert.equal(validate.group?.id, vscode.TaskGroup.Build.id);
      const ended = new Promise<void>((resolve) => {
        const sub = vscode.tasks.onDidEndTask((e) => {
          if (e.execution.task.name === validate.name) {
            sub.dispose();
            resolve();
          }
        });
      });
      await vscode.tasks.executeTask(validate);
      await ended;
      // The problem matcher's diagnostics, not the designer's (their source is 'Crawl Studio').
      const found = await until('the CLI\'s problems in the Problems panel', () => {
        const d = vscode.languages.getDiagnostics(broken).filter((x) => x.source === 'crawl-studio');
        return d.length >= 2 ? d : undefined;
      }, 30_000);
      const lines = found.map((d) => [d.range.start.line, d.severity]).sort((a, b) => (a[0] as number) - (b[0] as number));
      assert.deepEqual(lines[0], [0, vscode.DiagnosticSeverity.Error], 'the name on line 1');
      assert.ok(found.some((d) => d.range.start.line === 5 && /selector/.test(d.message)), found.map((d) => `${d.range.start.line}: ${d.message}`).join('\n'));
    } finally {
      await vscode.workspace.fs.delete(broken);
    }
  });

  it('declares what it supports in virtual workspaces', () => {
    const pkg = vscode.extensions.getExtension(EXTENSION_ID)!.packageJSON as { capabilities: { virtualWorkspaces?: unknown } };
    assert.ok(pkg.capabilities.virtualWorkspaces, 'capabilities.virtualWorkspaces is declared');
  });
});
