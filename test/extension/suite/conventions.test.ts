import * as assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as vscode from 'vscode';
import type { CrawlStudioApi } from '../../../src/extension/extension';
import { serveSite, type SiteServer } from '../../../src/demo/site';
import { parseTask } from '../../../src/core/task/parse';
import { saveFixture } from '../../../src/workspace/fixtureStore';
import { startRedis, type RedisServer } from '../../support/services';
import { demoShopTask } from '../../support/demoTask';
import { EXTENSION_ID, activateWith, restoreSettings, until } from '../support';
import { RED_HAT_YAML, TaskCompletions, TaskHovers } from '../../../src/extension/designer/editorFeatures';

// VS Code conventions (issue 23): `crawl-studio validate / run / test` as tasks whose problems land in the Problems
// panel through the $crawl-studio problem matcher; what the manifest declares.

/** Runs a task and resolves when it has ended. */
async function runToEnd(task: vscode.Task): Promise<void> {
  const ended = new Promise<void>((resolve) => {
    const sub = vscode.tasks.onDidEndTask((e) => {
      if (e.execution.task.name === task.name) {
        sub.dispose();
        resolve();
      }
    });
  });
  await vscode.tasks.executeTask(task);
  await ended;
}
describe('VS Code conventions: tasks, problem matcher, manifest', function () {
  this.timeout(120_000);

  before(async () => {
    await vscode.extensions.getExtension(EXTENSION_ID)!.activate();
  });

  it("offers validate, run and test tasks for each task file, and puts validate's problems in the Problems panel", async () => {
    const folder = vscode.workspace.workspaceFolders![0]!.uri;
    const broken = vscode.Uri.joinPath(folder, 'tasks-broken.crawl.yaml');
    await vscode.workspace.fs.writeFile(
      broken,
      new TextEncoder().encode(
        'name: Bad Name\nstart: [https://example.com/]\nrules:\n  - name: list\n    follow:\n      - { selector: "a[", to: list }\n',
      ),
    );
    try {
      const tasks = await until(
        "the task files' tasks",
        async () => {
          const all = await vscode.tasks.fetchTasks({ type: 'crawl-studio' });
          return all.some((t) => t.name === 'validate tasks-broken.crawl.yaml') ? all : undefined;
        },
        30_000,
      );
      const names = tasks.map((t) => t.name);
      for (const n of ['validate demo.crawl.yaml', 'run demo.crawl.yaml', 'test demo.crawl.yaml'])
        assert.ok(names.includes(n), names.join(', '));
      const validate = tasks.find((t) => t.name === 'validate tasks-broken.crawl.yaml')!;
      assert.equal(validate.group?.id, vscode.TaskGroup.Build.id);
      await runToEnd(validate);
      // The problem matcher's diagnostics, not the designer's (their source is 'Crawl Studio').
      const found = await until(
        "the task's problems in the Problems panel",
        () => {
          const d = vscode.languages.getDiagnostics(broken).filter((x) => x.source === 'crawl-studio');
          return d.length >= 2 ? d : undefined;
        },
        30_000,
      );
      const lines = found
        .map((d) => [d.range.start.line, d.severity])
        .sort((a, b) => (a[0] as number) - (b[0] as number));
      assert.deepEqual(lines[0], [0, vscode.DiagnosticSeverity.Error], 'the name on line 1');
      assert.ok(
        found.some((d) => d.range.start.line === 5 && /selector/.test(d.message)),
        found.map((d) => `${d.range.start.line}: ${d.message}`).join('\n'),
      );
      // Opened, the file's problems are the editor's live ones, each once: the task's go, and validating again
      // (the task run from the open file) adds no second copy.
      await vscode.window.showTextDocument(broken);
      const live = await until(
        "the editor's own problems, the task's gone",
        () => {
          const d = vscode.languages.getDiagnostics(broken);
          return d.some((x) => x.source === 'Crawl Studio') && !d.some((x) => x.source === 'crawl-studio')
            ? d
            : undefined;
        },
        30_000,
      );
      await runToEnd(validate);
      const after = vscode.languages.getDiagnostics(broken);
      const messages = after.map((d) => `${d.range.start.line}:${d.message}`);
      assert.equal(new Set(messages).size, messages.length, `a problem listed twice:\n${messages.join('\n')}`);
      assert.equal(after.length, live.length, messages.join('\n'));
      await vscode.commands.executeCommand('workbench.action.closeActiveEditor');
    } finally {
      await vscode.workspace.fs.delete(broken);
    }
  });

  // Red Hat's YAML extension completes task files from the schema the manifest gives it: each key came twice.
  // It cannot be installed here (no marketplace), so the provider is asked as it answers when it is.
  it('leaves schema completions and hovers to Red Hat YAML when it is installed, and still completes rule names', async () => {
    const pkg = vscode.extensions.getExtension(EXTENSION_ID)!.packageJSON as {
      contributes: { yamlValidation: { url: string }[] };
    };
    assert.ok(pkg.contributes.yamlValidation.length > 0, 'the schema is given to the YAML extension');
    assert.equal(RED_HAT_YAML, 'redhat.vscode-yaml');
    const doc = await vscode.workspace.openTextDocument({
      language: 'yaml',
      content:
        'name: t\nstart: [https://a.test/]\nrequest:\n  ret\nrules:\n  - name: list\n    follow:\n      - { selector: a, to:  }\n  - name: book\n',
    });
    const keyAt = new vscode.Position(3, 5);
    const toAt = doc.positionAt(doc.getText().indexOf('to:  }') + 4);
    const alone = new TaskCompletions(() => false);
    const withRedHat = new TaskCompletions(() => true);
    const labels = (items: vscode.CompletionItem[]) =>
      items.map((i) => (typeof i.label === 'string' ? i.label : i.label.label));
    assert.ok(labels(alone.provideCompletionItems(doc, keyAt)).includes('retries'));
    assert.deepEqual(labels(withRedHat.provideCompletionItems(doc, keyAt)), [], 'no schema key twice');
    assert.deepEqual(
      labels(withRedHat.provideCompletionItems(doc, toAt)).sort(),
      ['book', 'list'],
      'rule names, which no schema knows',
    );
    const hoverAt = doc.positionAt(doc.getText().indexOf('request') + 2);
    assert.ok(
      new TaskHovers(
        () => undefined,
        () => false,
      ).provideHover(doc, hoverAt),
    );
    assert.equal(
      new TaskHovers(
        () => undefined,
        () => true,
      ).provideHover(doc, hoverAt),
      null,
    );
  });

  // Task fixtures in the Testing view: each a test, run from there (or the gutter), a changed field shown as a diff.
  it('lists fixtures in the Testing view and runs them, a changed field as a diff', async () => {
    const api = (await vscode.extensions.getExtension(EXTENSION_ID)!.activate()) as CrawlStudioApi;
    const folder = vscode.workspace.workspaceFolders![0]!.uri;
    const dir = vscode.Uri.joinPath(folder, 'fx');
    const file = join(dir.fsPath, 'fx.crawl.yaml');
    const html = (title: string) =>
      `<html><body><article><h1>${title}</h1><p class="price">£3</p></article></body></html>`;
    await vscode.workspace.fs.createDirectory(dir);
    writeFileSync(
      file,
      'name: fx\nstart: [http://fx.test/a]\nrules:\n  - name: page\n    items:\n      - type: book\n        fields: { title: h1, price: p.price }\n',
    );
    try {
      const { task } = parseTask(readFileSync(file, 'utf8'), file);
      const same = await saveFixture(
        file,
        task!,
        {
          url: 'http://fx.test/a',
          finalUrl: 'http://fx.test/a',
          html: html('Alpha'),
          status: 200,
          fetchedAt: new Date().toISOString(),
        },
        'page',
        0,
      );
      const changed = await saveFixture(
        file,
        task!,
        {
          url: 'http://fx.test/b',
          finalUrl: 'http://fx.test/b',
          html: html('Beta'),
          status: 200,
          fetchedAt: new Date().toISOString(),
        },
        'page',
        0,
      );
      // The page changed since the fixture was saved: its title reads otherwise now.
      writeFileSync(changed.replace(/\.json$/, '.html'), html('Gamma'));
      await api.fixtureTests.discover();
      const suite = api.fixtureTests.controller.items.get(vscode.Uri.file(file).toString());
      assert.ok(suite, 'the task file is a suite');
      assert.equal(suite.children.size, 2);
      const ran = new Promise<void>((r) => {
        const sub = api.fixtureTests.onDidRun(() => {
          sub.dispose();
          r();
        });
      });
      await vscode.commands.executeCommand('testing.runAll');
      await ran;
      const outcomes = [...api.fixtureTests.lastRun.values()].sort((a, b) => a.id.localeCompare(b.id));
      const idOf = (json: string) =>
        `${vscode.Uri.file(file).toString()}#${json
          .split('/')
          .pop()!
          .replace(/\.json$/, '')}`;
      assert.equal(api.fixtureTests.lastRun.get(idOf(same))?.state, 'passed', JSON.stringify(outcomes));
      const failed = api.fixtureTests.lastRun.get(idOf(changed));
      assert.equal(failed?.state, 'failed', JSON.stringify(outcomes));
      assert.match(failed.message ?? '', /1 field changed/);
      assert.match(failed.expected ?? '', /title: "Beta"/);
      assert.match(failed.actual ?? '', /title: "Gamma"/);
      // The field first on each line (an item's label can be a long quote), and the marker at the field's line.
      assert.match(failed.expected ?? '', /^title: "Beta" {3}\(book /);
      assert.equal(failed.line, 6, 'the failure marker on the line of the changed field (fields: { title: h1, … })');
    } finally {
      await vscode.workspace.fs.delete(dir, { recursive: true });
      await vscode.workspace.fs
        .delete(vscode.Uri.joinPath(folder, '.crawl', 'fixtures', 'fx'), { recursive: true })
        .then(undefined, () => undefined);
    }
  });

  it('declares what it supports in virtual workspaces', () => {
    const pkg = vscode.extensions.getExtension(EXTENSION_ID)!.packageJSON as {
      capabilities: { virtualWorkspaces?: unknown };
    };
    assert.ok(pkg.capabilities.virtualWorkspaces, 'capabilities.virtualWorkspaces is declared');
  });
});

// Long operations show cancellable progress (issue 23, VS Code conventions). Stop Crawl waits for the pages in
// flight; its Cancel stops waiting: the workers are killed and their pages go back to the queue.
describe('VS Code conventions: cancellable progress (real Redis, real crawl)', function () {
  this.timeout(120_000);
  let redis: RedisServer;
  let site: SiteServer;
  let api: CrawlStudioApi;
  let answered = false;
  const held: ServerResponse[] = [];

  before(async () => {
    redis = await startRedis();
    // A page that answers after 20 s, within the workers' 30 s grace: a graceful stop waits for it (and the worker
    // then exits by itself), a cancelled one does not.
    site = await serveSite({ listPages: 1, perPage: 2 }, 0, (req, res) => {
      if (req.url !== '/slow.html') return false;
      held.push(res);
      setTimeout(() => {
        answered = true;
        if (!res.writableEnded) res.writeHead(200, { 'content-type': 'text/html' }).end('<h1>late</h1>');
      }, 20_000).unref();
      return true;
    });
    api = await activateWith({ redisUrl: redis.url, workers: 1 });
  });

  after(async () => {
    for (const r of held) r.destroy();
    await restoreSettings(api, ['redisUrl', 'workers']);
    await site?.close();
    await redis?.stop();
  });

  // The run task is Start Crawl: a crawl of this window, on the extension's Redis, that the views follow.
  it('runs a crawl from the run task, to its end', async () => {
    const folder = vscode.workspace.workspaceFolders![0]!.uri;
    const uri = vscode.Uri.joinPath(folder, 'runtask.crawl.yaml');
    await vscode.workspace.fs.writeFile(
      uri,
      new TextEncoder().encode(demoShopTask({ name: 'runtask', siteUrl: site.url })),
    );
    try {
      const task = await until(
        'the run task',
        async () =>
          (await vscode.tasks.fetchTasks({ type: 'crawl-studio' })).find((t) => t.name === 'run runtask.crawl.yaml'),
        30_000,
      );
      let message = '';
      const sub = api.crawls.onDidFinish((e) => e.task === 'runtask' && (message = e.message));
      const ended = new Promise<void>((resolve) => {
        const s2 = vscode.tasks.onDidEndTask((e) => e.execution.task.name === task.name && (s2.dispose(), resolve()));
      });
      await vscode.tasks.executeTask(task);
      await ended;
      sub.dispose();
      assert.match(message, /^Crawl 'runtask' finished: \d+ pages, 2 items, 0 failed/);
      const queues = await vscode.commands.executeCommand<{ name: string }[]>('crawlStudio.refresh');
      assert.ok(
        queues?.some((q) => q.name === 'runtask'),
        'the Queue Explorer lists its queue',
      );
    } finally {
      await vscode.workspace.fs.delete(uri);
    }
  });

  // Issue 32: the run task's Ctrl+C is Ctrl-C of `crawl-studio run` (the run is kept to resume), not Stop Crawl.
  it('the run task\'s Ctrl+C interrupts the crawl: one "interrupted" message, the run kept to resume', async () => {
    const folder = vscode.workspace.workspaceFolders![0]!.uri;
    const uri = vscode.Uri.joinPath(folder, 'runint.crawl.yaml');
    // 1 s between pages: the crawl is still going when the test interrupts it.
    await vscode.workspace.fs.writeFile(
      uri,
      new TextEncoder().encode(
        demoShopTask({ name: 'runint', siteUrl: site.url, perHost: { concurrency: 1, delay: '1s' } }),
      ),
    );
    try {
      const task = await until(
        'the run task',
        async () =>
          (await vscode.tasks.fetchTasks({ type: 'crawl-studio' })).find((t) => t.name === 'run runint.crawl.yaml'),
        30_000,
      );
      const messages: string[] = [];
      const sub = api.crawls.onDidFinish((e) => e.task === 'runint' && messages.push(e.message));
      const ended = new Promise<void>((resolve) => {
        const s2 = vscode.tasks.onDidEndTask((e) => e.execution.task.name === task.name && (s2.dispose(), resolve()));
      });
      const execution = await vscode.tasks.executeTask(task);
      await until('a page done', () => (api.crawls.get('runint')?.status?.stats?.done ?? 0) >= 1, 60_000);
      execution.terminate();
      await ended;
      await until('the message', () => messages.length > 0);
      sub.dispose();
      assert.equal(messages.length, 1, messages.join(' | '));
      assert.match(messages[0]!, /^Crawl 'runint' interrupted: \d+ pages?, .*Start Crawl resumes it/);
      const conn = await api.connection.get();
      assert.equal(await conn.hget('cs:{runint}:#meta', 'state'), 'running', 'kept to resume');
      assert.ok(
        Number(await conn.hget('cs:{runint}:#meta', 'idleSince')) > 0,
        'marked idle: the time until it resumes is not in its duration',
      );
    } finally {
      await vscode.workspace.fs.delete(uri);
    }
  });

  it('Stop Crawl, cancelled, kills the workers instead of waiting for their pages', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cs-cancel-'));
    const file = join(dir, 'slow.crawl.yaml');
    writeFileSync(
      file,
      `name: slow\nstart: [${site.url}/slow.html]\nrequest: { timeout: 120s }\nrules:\n  - name: page\n`,
    );
    const rc = await api.crawls.start(await vscode.workspace.openTextDocument(vscode.Uri.file(file)));
    const signals: (string | null)[] = [];
    rc.launch.supervisor.on('exit', (_pid: number, _code: number | null, signal: string | null) =>
      signals.push(signal),
    );
    await until('the worker to be on the slow page', () => (site.hits.get('/slow.html') ?? 0) > 0, 60_000);
    const cts = new vscode.CancellationTokenSource();
    const stopping = api.crawls.stop('slow', cts.token);
    cts.cancel();
    await stopping;
    assert.equal(answered, false, 'the stop did not wait for the page');
    assert.deepEqual(signals, ['SIGKILL']);
    assert.equal(api.crawls.get('slow'), undefined);
  });
});
