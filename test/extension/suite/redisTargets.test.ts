import * as assert from 'node:assert/strict';
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import * as vscode from 'vscode';
import type { CrawlStudioApi } from '../../../src/extension/extension';
import type { ConnectionState } from '../../../src/extension/redisConnection';
import { parseRedisTarget } from '../../../src/core/url/redisTarget';
import { TASKS_KEY } from '../../../src/frontier/keys';
import { startRedisCluster, startRedisSentinel, type RedisCluster, type RedisSentinel } from '../../support/services';
import { activateWith, restoreSettings } from '../support';

// Connect to Redis… with Sentinel and Cluster targets (issue 19), in the real extension host against real
// sentinels and a real cluster: the setting keeps the target without passwords, Secret Storage keeps them, and
// the views' connection and the workers' target have them back.

describe('Connect to Redis…: Sentinel and Cluster targets (real sentinels, real cluster)', function () {
  this.timeout(180_000);
  let api: CrawlStudioApi;
  let sentinel: RedisSentinel | undefined;
  let cluster: RedisCluster | undefined;
  const password = 'p@ss:w/rd';
  const sentinelPassword = 's3nt&nel';

  // Connect to Redis… writes the workspace's settings: a .vscode folder this suite creates is removed after it.
  const dotVscode = join(vscode.workspace.workspaceFolders![0]!.uri.fsPath, '.vscode');
  const hadDotVscode = existsSync(dotVscode);

  before(async () => {
    [sentinel, cluster] = await Promise.all([startRedisSentinel({ password, sentinelPassword }), startRedisCluster()]);
    api = await activateWith({});
  });

  after(async () => {
    // Forget the passwords (configure() deletes the secrets a target does not have), then the setting.
    if (cluster)
      await api.connection.configure(cluster.url, {}, vscode.ConfigurationTarget.Workspace).catch(() => undefined);
    await vscode.workspace
      .getConfiguration('crawlStudio')
      .update('redisUrl', undefined, vscode.ConfigurationTarget.Workspace);
    await restoreSettings(api, []);
    if (!hadDotVscode) rmSync(dotVscode, { recursive: true, force: true });
    await sentinel?.stop();
    await cluster?.stop();
  });

  it('takes a redis+sentinel:// target with both passwords: the setting without them, the connection on the master', async () => {
    const state = await vscode.commands.executeCommand<ConnectionState>('crawlStudio.connectRedis', sentinel!.url);
    assert.equal(state.kind, 'ready', JSON.stringify(state));
    const stored = vscode.workspace.getConfiguration('crawlStudio').inspect<string>('redisUrl')!.workspaceValue!;
    const ports = sentinel!.sentinels.map((s) => `127.0.0.1:${s.port}`).join(',');
    assert.equal(stored, `redis+sentinel://${ports}/csmaster`, 'no password in settings');
    assert.ok(
      state.kind === 'ready' && !state.url.includes('p@ss') && !state.url.includes('s3nt'),
      'the shown target is redacted',
    );
    // What workers get back: both passwords.
    const target = parseRedisTarget(api.connection.workerUrl!);
    assert.ok(target.kind === 'sentinel');
    assert.equal(target.password, password);
    assert.equal(target.sentinelPassword, sentinelPassword);
    const redis = await api.connection.get();
    const info = await redis.info('server');
    assert.equal(Number(/^tcp_port:(\d+)/m.exec(info)![1]), (await sentinel!.master()).port, 'connected to the master');
  });

  it('refuses a ?db=N the master does not have, saying so, rather than show database 0', async () => {
    // ioredis goes on in database 0 when SELECT is refused: the views showed another crawl's keys as this one's.
    const url = `${sentinel!.url}${sentinel!.url.includes('?') ? '&' : '?'}db=99`;
    await assert.rejects(
      api.connection.configure(url, {}, vscode.ConfigurationTarget.Workspace),
      /cannot connect to Sentinel .*: database not available \(ERR DB index is out of range\)/,
    );
    const state = api.connection.state;
    assert.ok(state.kind === 'failed' && /database not available/.test(state.error), JSON.stringify(state));
    assert.ok(!state.error.includes('p@ss') && !state.error.includes('s3nt'), 'no password in the error');
  });

  it('takes a redis+cluster:// target: the explorer reads its queues through the cluster', async () => {
    await api.connection.configure(cluster!.url, {}, vscode.ConfigurationTarget.Workspace);
    assert.equal(api.connection.state.kind, 'ready');
    assert.equal(
      vscode.workspace.getConfiguration('crawlStudio').inspect<string>('redisUrl')!.workspaceValue,
      cluster!.url,
    );
    // A task known to this Redis (its queue empty): the list of tasks and the queue's counts are in other slots.
    await (await api.connection.get()).sadd(TASKS_KEY, 'on-cluster');
    const queues =
      await vscode.commands.executeCommand<{ name: string; counts: Record<string, number> }[]>('crawlStudio.refresh');
    assert.deepEqual(
      queues.map((q) => q.name),
      ['on-cluster'],
    );
    assert.equal(
      Object.values(queues[0]!.counts).reduce((a, b) => a + b, 0),
      0,
    );
  });
});
