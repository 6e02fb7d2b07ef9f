import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { saveFixture } from '../../src/workspace/fixtureStore';
import { DEMO_SITE, renderPage } from '../../src/demo/site';
import { writeTask } from '../support/crawl';

// `crawl-studio test`: fixtures saved from the designer re-run from the command line, so selectors are
// regression-tested like code (exit 0 when unchanged, 1 with the changed fields).

describe('crawl-studio test', function () {
  this.timeout(60_000);
  it('passes on unchanged selectors and names the field a selector change breaks', async () => {
    const yaml = readFileSync('examples/books.crawl.yaml', 'utf8');
    const task = await writeTask(yaml);
    const url = 'http://127.0.0.1:8737/catalogue/book-17.html';
    await saveFixture(task.file, task, { url, finalUrl: url, html: renderPage('/catalogue/book-17.html', DEMO_SITE)!.body }, 'book', 2);
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
