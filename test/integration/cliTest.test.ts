import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { saveFixture } from '../../src/workspace/fixtureStore';
import { DEMO_SITE, renderPage, serveSite } from '../../src/demo/site';
import { writeTask } from '../support/crawl';

// `crawl-studio test`: fixtures saved from the designer re-run from the command line, so selectors are
// regression-tested like code (exit 0 when unchanged, 1 with the changed fields).

describe('crawl-studio test', function () {
  this.timeout(60_000);
  it('passes on unchanged selectors and names the field a selector change breaks', async () => {
    const yaml = readFileSync('examples/books.crawl.yaml', 'utf8');
    const task = await writeTask(yaml);
    const url = 'http://127.0.0.1:8737/catalogue/book-17.html';
    await saveFixture(
      task.file,
      task,
      {
        url,
        finalUrl: url,
        html: renderPage('/catalogue/book-17.html', DEMO_SITE)!.body,
        status: 200,
        fetchedAt: new Date().toISOString(),
      },
      'book',
      2,
    );
    const cli = resolve('dist/cli.js');
    let r = spawnSync(process.execPath, [cli, 'test', task.file], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /ok/);

    writeFileSync(task.file, yaml.replace('title: h1', 'title: h2'));
    r = spawnSync(process.execPath, [cli, 'test', task.file], { encoding: 'utf8' });
    assert.equal(r.status, 1, r.stdout + r.stderr);
    assert.match(r.stdout, /FAIL/);
    assert.match(r.stdout, /title/);
  });
});

// Not spawnSync: the site is served by this process, which must keep answering while the CLI fetches from it.
function cliAsync(args: string[]): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((res) => {
    const child = spawn(process.execPath, [resolve('dist/cli.js'), ...args]);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (b) => (stdout += b));
    child.stderr.on('data', (b) => (stderr += b));
    child.on('exit', (status) => res({ status, stdout, stderr }));
  });
}

// `crawl-studio fixture save` (issue 21, item 3): the same fixture saved from the terminal, then `test` as CI runs
// it: exit status and a diff per field. A real HTTP server and the real CLI.
describe('crawl-studio fixture save', function () {
  this.timeout(60_000);
  it('saves a fetched page routed to its rule; test passes, then fails with the field diff after a selector change', async () => {
    const server = await serveSite(DEMO_SITE, 0);
    try {
      const yaml = readFileSync('examples/books.crawl.yaml', 'utf8').replaceAll('http://127.0.0.1:8737', server.url);
      const task = await writeTask(yaml);
      let r = await cliAsync(['test', task.file]);
      assert.equal(r.status, 1, 'no fixtures is a failure in CI, not a pass');
      assert.match(r.stdout, /crawl-studio fixture save/, r.stdout);

      r = await cliAsync(['fixture', 'save', task.file, `${server.url}/catalogue/book-17.html`]);
      assert.equal(r.status, 0, r.stdout + r.stderr);
      assert.match(r.stdout, /^saved .*\.crawl\/fixtures\/books\/.*\.json \(rule book, HTTP 200\): 1 items/m, r.stdout);

      r = await cliAsync(['test', task.file]);
      assert.equal(r.status, 0, r.stdout + r.stderr);
      assert.match(r.stdout, /^ok +.* \(book, /m);

      writeFileSync(task.file, yaml.replace('title: h1', 'title: h2'));
      r = await cliAsync(['test', task.file]);
      assert.equal(r.status, 1, r.stdout + r.stderr);
      assert.match(r.stdout, /^ +book \S+: title changed: "naïve “quotes” 17" -> "Related"$/m, r.stdout);

      r = await cliAsync(['fixture', 'save', task.file, `${server.url}/`, '--rule', 'nope']);
      assert.equal(r.status, 2, r.stdout + r.stderr);
      assert.match(r.stderr, /no rule 'nope'/);
    } finally {
      await server.close();
    }
  });
});
