import * as assert from 'node:assert/strict';
import * as vscode from 'vscode';
import type { CrawlStudioApi } from '../../../src/extension/extension';
import { TASKS_KEY } from '../../../src/frontier/keys';
import { activateWith, restoreSettings, until } from '../support';

// Issue 23, item 1: after the managed redis-server was stopped, "Start Managed Redis" started a new one on another
// port, the explorer said "No queues yet" although the data held the task, and workers kept dialling the old port.
// Now a managed server that dies is started again by the extension, on the same port with the same data, and
// every client reconnects by itself. A real redis-server, killed with SIGKILL.

describe('managed Redis (a real redis-server started by the extension)', function () {
  this.timeout(90_000);
  let api: CrawlStudioApi;
  let hadSettingsDir = false;

  before(async () => {
    hadSettingsDir = await vscode.workspace.fs
      .stat(vscode.Uri.joinPath(vscode.workspace.workspaceFolders![0]!.uri, '.vscode'))
      .then(
        () => true,
        () => false,
      );
    api = await activateWith({ redisUrl: '' });
  });
  after(async () => {
    await restoreSettings(api, ['redisUrl']);
    // Start Managed Redis clears the workspace's redisUrl, which writes the fixture's .vscode/settings.json.
    const settingsDir = vscode.Uri.joinPath(vscode.workspace.workspaceFolders![0]!.uri, '.vscode');
    if (!hadSettingsDir)
      await vscode.workspace.fs.delete(settingsDir, { recursive: true }).then(undefined, () => undefined);
  });

  it('is started again on the same port with its data when it dies, and the views recover without a reload', async () => {
    const client = await api.connection.get();
    const first = api.connection.managedServer;
    assert.ok(first, 'a managed server was started');
    await client.sadd(TASKS_KEY, 'survivor');
    // A SIGKILL loses what the process holds, not what it wrote to the file (the fsync each second guards against a
    // machine crash, which this is not): the write is safe once Redis has no AOF buffer left for it.
    await until(
      'the write in the append-only file',
      async () => /^aof_buffer_length:0\r?$/m.test(await client.info('persistence')),
      10_000,
    );
    process.kill(first.pid, 'SIGKILL');

    const second = await until('a new managed server', () => {
      const m = api.connection.managedServer;
      return m && m.pid !== first.pid ? m : undefined;
    });
    assert.equal(second.url, first.url, 'the same port, so every client and worker reconnects to it');
    await until('the connection ready again', () => api.connection.state.kind === 'ready');
    assert.equal(await client.sismember(TASKS_KEY, 'survivor'), 1, 'the data survived the restart');
    const queues = await until('the explorer to list the task again', async () => {
      const q = await vscode.commands.executeCommand<{ name: string }[]>('crawlStudio.refresh');
      return q?.some((x) => x.name === 'survivor') ? q : undefined;
    });
    assert.ok(queues.some((x) => x.name === 'survivor'));
    await client.srem(TASKS_KEY, 'survivor');

    // Start Managed Redis on a running one keeps its port too.
    await vscode.commands.executeCommand('crawlStudio.startManagedRedis');
    assert.equal(api.connection.managedServer?.url, first.url);
  });
});
