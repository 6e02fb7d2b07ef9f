import * as assert from 'node:assert/strict';
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import * as vscode from 'vscode';
import type { CrawlStudioApi } from '../../../src/extension/extension';
import { EXTENSION_ID } from '../support';

// Workspace Trust, in a real workbench whose folder is in restricted mode: a cloned repository must not be able
// to make the editor crawl, start processes, or talk to a Redis server of its choosing. The workspace's settings
// aim crawlStudio.redisUrl at a trap (a TCP server that counts connections) and its task file's start URL at the
// same trap, so any connection, Redis or HTTP, shows up in one counter.

/** Processes whose parent is `pid`, with their command names and lines (Linux /proc). */
function childProcesses(pid: number): { pid: number; comm: string; cmdline: string }[] {
  const out: { pid: number; comm: string; cmdline: string }[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const m = /^\d+ \((.*)\) \S+ (\d+)/.exec(stat);
      if (m && Number(m[2]) === pid)
        out.push({
          pid: Number(name),
          comm: m[1]!,
          cmdline: readFileSync(`/proc/${name}/cmdline`, 'utf8').replace(/\0/g, ' '),
        });
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

describe('an untrusted workspace (restricted mode)', function () {
  this.timeout(60_000);
  let api: CrawlStudioApi;
  let trap: Server;
  let trapPort = 0;
  const connections: Socket[] = [];
  const folder = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath ?? '';
  const taskFile = join(folder, 'untrusted.crawl.yaml');
  const settingsDir = join(folder, '.vscode');

  before(async () => {
    trap = createServer((socket) => {
      connections.push(socket);
      socket.destroy();
    });
    await new Promise<void>((r) => trap.listen(0, '127.0.0.1', r));
    trapPort = (trap.address() as { port: number }).port;
    writeFileSync(
      taskFile,
      `name: untrusted\nstart:\n  - http://127.0.0.1:${trapPort}/\nrules:\n  - name: page\n    fields:\n      title: h1\n`,
    );
    await vscode.workspace
      .getConfiguration('crawlStudio')
      .update('redisUrl', `redis://127.0.0.1:${trapPort}/0`, vscode.ConfigurationTarget.Workspace);
    const ext = vscode.extensions.getExtension<CrawlStudioApi>(EXTENSION_ID);
    assert.ok(ext, `${EXTENSION_ID} is not installed`);
    api = await ext.activate();
  });

  after(async () => {
    trap.close();
    rmSync(taskFile, { force: true });
    rmSync(settingsDir, { recursive: true, force: true });
  });

  it('is really untrusted, and the workspace really sets crawlStudio.redisUrl (else the tests below prove nothing)', () => {
    assert.equal(vscode.workspace.isTrusted, false);
    // On disk, where a cloned repository would have it; VS Code itself hides it from the configuration API
    // (the setting is in the manifest's restrictedConfigurations), and the extension ignores it besides.
    const onDisk = JSON.parse(readFileSync(join(settingsDir, 'settings.json'), 'utf8')) as Record<string, unknown>;
    assert.equal(onDisk['crawlStudio.redisUrl'], `redis://127.0.0.1:${trapPort}/0`);
    assert.equal(vscode.workspace.getConfiguration('crawlStudio').get('redisUrl'), '');
  });

  it('activates in limited mode: task files are validated and the commands exist', async () => {
    const commands = await vscode.commands.getCommands(true);
    for (const c of ['crawlStudio.startCrawl', 'crawlStudio.startWorkers', 'crawlStudio.validateTask'])
      assert.ok(commands.includes(c), c);
    const doc = await vscode.workspace.openTextDocument(taskFile);
    await vscode.window.showTextDocument(doc);
    const ok = await vscode.commands.executeCommand('crawlStudio.validateTask', doc.uri);
    assert.ok(ok !== undefined, 'validation runs in an untrusted workspace');
  });

  it('ignores the workspace redisUrl: connecting neither reaches it nor starts a managed redis-server', async () => {
    await vscode.commands.executeCommand('crawlStudio.refresh');
    const state = api.connection.state;
    assert.equal(state.kind, 'failed', JSON.stringify(state));
    assert.match(state.kind === 'failed' ? state.error : '', /untrusted workspace/);
    assert.equal(connections.length, 0, 'something connected to the workspace redisUrl');
    assert.deepEqual(
      childProcesses(process.pid).filter((c) => /redis/.test(c.comm)),
      [],
    );
  });

  it('starts no crawl: Start Crawl refuses, and nothing is fetched', async () => {
    const result = await vscode.commands.executeCommand('crawlStudio.startCrawl', vscode.Uri.file(taskFile));
    assert.equal(result, undefined);
    assert.deepEqual(
      api.crawls.list().map((c) => c.task.name),
      [],
    );
    // Nothing contacted is an absence: a moment for a connection that would follow the command, then none may have.
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(connections.length, 0, 'the start URL or the Redis URL was contacted');
  });

  it('starts no worker processes', async () => {
    const result = await vscode.commands.executeCommand('crawlStudio.startWorkers', vscode.Uri.file(taskFile), 2);
    assert.equal(result, undefined);
    assert.deepEqual(api.workers.list(), []);
    assert.deepEqual(
      childProcesses(process.pid).filter((c) => /worker\.js/.test(c.cmdline)),
      [],
    );
  });

  it('starts no managed redis-server when asked to', async () => {
    await vscode.commands.executeCommand('crawlStudio.startManagedRedis');
    assert.equal(api.connection.state.kind, 'failed');
    assert.deepEqual(
      childProcesses(process.pid).filter((c) => /redis/.test(c.comm)),
      [],
    );
    assert.equal(connections.length, 0);
  });
});
