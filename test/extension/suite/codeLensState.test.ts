import * as assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as vscode from 'vscode';
import type { CrawlStudioApi } from '../../../src/extension/extension';
import { serveSite, type SiteServer } from '../../../src/demo/site';
import { startRedis, type RedisServer } from '../../support/services';
import { demoShopTask } from '../../support/demoTask';
import { activateWith, restoreSettings, until } from '../support';

// Issue 32: a task file's CodeLens said "Stop Crawl" after its crawl had finished while the editor title offered
// Start. The lens was told to refresh on every progress tick; the workbench postpones a lens refresh on each such
// event (a debounce that grows with the provider's time), so on a busy machine it refreshed late or never. The lens
// now follows what the editor title follows: the crawl manager's running task files, signalled only when that set
// changes. Here, through the lens's own commands (what a click runs), after a crawl that finishes and after a Stop:
// the lens says Start, and it was told to refresh exactly when Start/Stop flipped, never on a tick in between.

type Flip = 'Start' | 'Stop';

describe('The task file CodeLens follows the running crawls (issue 32)', function () {
  this.timeout(240_000);
  let redis: RedisServer;
  let site: SiteServer;
  let api: CrawlStudioApi;
  let taskUri: vscode.Uri;
  const subs: vscode.Disposable[] = [];
  /** What the lens would show at each of its refresh events, read when the event fires. */
  let lensEvents: Flip[] = [];
  /** The crawl manager's change events (every progress tick among them). */
  let ticks = 0;

  before(async () => {
    redis = await startRedis();
    // One page at a time, 100 ms apart: the crawl lasts several progress ticks (one a second).
    site = await serveSite({ listPages: 3, perPage: 8 }, 0, () => false, 40);
    api = await activateWith({ redisUrl: redis.url, workers: 1, concurrency: 1 });
    const dir = mkdtempSync(join(tmpdir(), 'cs-lens-'));
    const file = join(dir, 'lensed.crawl.yaml');
    writeFileSync(
      file,
      demoShopTask({ name: 'lensed', siteUrl: site.url, perHost: { concurrency: 1, delay: '100ms' } }),
    );
    taskUri = vscode.Uri.file(file);
    await vscode.window.showTextDocument(await vscode.workspace.openTextDocument(taskUri));
    subs.push(
      api.codeLens.onDidChangeCodeLenses(() =>
        lensEvents.push(api.crawls.isRunning(taskUri.fsPath) ? 'Stop' : 'Start'),
      ),
      api.crawls.onDidChange(() => ticks++),
    );
  });

  after(async () => {
    for (const s of subs) s.dispose();
    await vscode.commands.executeCommand('workbench.action.closeAllEditors');
    if (api?.crawls.get('lensed')) await api.crawls.stop('lensed');
    await vscode.commands.executeCommand('crawlStudio.stopWorkers');
    await restoreSettings(api, ['redisUrl', 'workers', 'concurrency']);
    await site?.close();
    await redis?.stop();
  });

  beforeEach(() => {
    lensEvents = [];
    ticks = 0;
  });

  /** The top lens, Start Crawl or Stop Crawl, as the workbench gets it from every provider. */
  async function topLens(): Promise<vscode.Command> {
    const lenses = await vscode.commands.executeCommand<vscode.CodeLens[]>('vscode.executeCodeLensProvider', taskUri);
    const top = lenses.filter((l) => /(Start|Stop) Crawl/.test(l.command?.title ?? ''));
    assert.equal(top.length, 1, JSON.stringify(lenses.map((l) => l.command?.title)));
    return top[0]!.command!;
  }

  /** Runs the lens's command as a click does. */
  const click = async (c: vscode.Command) => vscode.commands.executeCommand(c.command, ...(c.arguments ?? []));

  /** Clicks Start Crawl; the lens then says Stop Crawl, as the editor title's running task files do. */
  async function startFromLens() {
    const start = await topLens();
    assert.match(start.title, /Start Crawl/);
    await click(start);
    const rc = api.crawls.get('lensed')!;
    assert.ok(rc, 'the click started the crawl');
    assert.match((await topLens()).title, /Stop Crawl/);
    assert.deepEqual(api.crawls.runningFiles(), [taskUri.fsPath]);
    return rc;
  }

  /** After the run ended: Start everywhere, and the lens was told so at the flips only, not at each tick. */
  async function assertStartAgain() {
    assert.match((await topLens()).title, /Start Crawl/);
    assert.deepEqual(api.crawls.runningFiles(), [], "the editor title's running task files");
    assert.deepEqual(lensEvents, ['Stop', 'Start'], `lens refresh events (${ticks} crawl manager events)`);
    assert.ok(ticks > lensEvents.length, `progress was reported in between (${ticks} events)`);
  }

  it('says Start Crawl again once the crawl finished', async () => {
    const rc = await startFromLens();
    const result = await rc.done;
    assert.equal(result.outcome, 'finished');
    await assertStartAgain();
  });

  it('says Start Crawl again after Stop Crawl', async () => {
    const rc = await startFromLens();
    await until('a few pages', () => (rc.status?.stats?.done ?? 0) >= 3);
    const stop = await topLens();
    assert.match(stop.title, /Stop Crawl/);
    assert.equal(await click(stop), 'stopped');
    await assertStartAgain();
  });
});
