import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { TaskFileError } from '../../src/core/task/diagnostics';
import type { PageRecord } from '../../src/store/types';
import { closePreviewBrowser } from '../../src/extension/designer/browserPreview';
import { PageSource } from '../../src/extension/designer/pages';
import { loadTaskFile } from '../../src/workspace/taskFile';
import { ENTRIES, PER_LOAD, serveActionSite, type ActionSite } from '../support/actionSite';
import { browserOrSkip } from '../support/browser';
import { bufferedPages, session } from '../support/crawl';
import { startRedis, type RedisServer } from '../support/services';

// Pages whose data only page actions bring (issue 30), crawled by real worker processes with real Chromium: an
// infinite-scroll feed (60 entries, 20 per scroll), the same feed behind "load more", a search form, and a workspace
// script. A rendered page without actions gets the first 20: the actions are what bring the other 40.

const ITEM = (type: string) => `[ { type: ${type}, scope: article.entry, key: [id], fields: { id: .id, title: h2 } } ]`;

function taskYaml(site: ActionSite, name: string): string {
  return `name: ${name}
start:
  - { url: "${site.url}/feed?by=count", rule: scroll-count }
  - { url: "${site.url}/feed?by=idle", rule: scroll-idle }
  - { url: "${site.url}/feed?by=none", rule: plain }
  - { url: "${site.url}/more", rule: load-more }
  - { url: "${site.url}/search", rule: search }
  - { url: "${site.url}/more?by=broken", rule: broken }
request: { timeout: 30s, retries: { attempts: 1 } }
rules:
  - name: scroll-count
    browser:
      waitFor: { selector: .entry }
      actions:
        - scroll: { selector: .entry, count: ${ENTRIES}, max: 10 }
    items: ${ITEM('counted')}
  - name: scroll-idle
    browser:
      waitFor: { selector: .entry }
      actions:
        - scroll: { selector: .entry }
    items: ${ITEM('idle')}
  - name: plain
    browser: { waitFor: { selector: .entry } }
    items: ${ITEM('plain')}
  - name: load-more
    browser:
      waitFor: { selector: .entry }
      actions:
        - click: { selector: button.more, untilGone: true, max: 10 }
    items: ${ITEM('clicked')}
  - name: search
    browser:
      actions:
        - fill: { selector: 'input[name=q]', value: '\${CRAWL_STUDIO_QUERY}' }
        - select: { selector: '#sort', value: Descending }
        - press: { selector: 'input[name=q]', key: Enter }
        - wait: { selector: li.result }
    items: [ { type: result, scope: li.result, fields: { text: span } } ]
  - name: broken
    browser:
      waitFor: { selector: .entry }
      actions:
        - click: { selector: button.more }
        - click: { selector: button.never, timeout: 1s }
    items: ${ITEM('broken')}
`;
}

function writeTaskDir(yaml: string, files: Record<string, string> = {}): string {
  const dir = mkdtempSync(join(tmpdir(), 'cs-actions-'));
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(join(dir, name, '..'), { recursive: true });
    writeFileSync(join(dir, name), text);
  }
  const file = join(dir, 'task.crawl.yaml');
  writeFileSync(file, yaml);
  return file;
}

/** The `id`s of the items of `type`, sorted. */
function ids(pages: readonly PageRecord[], type: string): number[] {
  return pages
    .flatMap((p) => p.items.filter((i) => i.type === type).map((i) => Number(i.data.id)))
    .sort((a, b) => a - b);
}

const ALL = Array.from({ length: ENTRIES }, (_, i) => i);

/** Clicks "load more" until it is gone, waiting for each batch: what a script of the workspace may do. */
const EXPAND_SCRIPT = `
while (document.querySelector('button.more')) {
  const before = document.querySelectorAll('.entry').length;
  document.querySelector('button.more').click();
  await new Promise((resolve) => { const t = setInterval(() => { if (document.querySelectorAll('.entry').length > before) { clearInterval(t); resolve(); } }, 20); });
}`;

describe('page actions: scroll, load more, forms and scripts (real Chromium, real Redis, worker processes)', function () {
  this.timeout(180_000);
  let redis: RedisServer;
  let site: ActionSite;

  before(function () {
    browserOrSkip(this);
  });
  beforeEach(async () => {
    redis = await startRedis();
    site = await serveActionSite();
  });
  afterEach(async () => {
    await site?.close();
    await redis?.stop();
  });

  async function crawl(file: string, opts: { allowScripts?: boolean; secretEnv?: Record<string, string> } = {}) {
    const task = await loadTaskFile(file, { allowScripts: opts.allowScripts ?? false });
    const log: string[] = [];
    const s = session(task, redis.url, {
      workers: 1,
      concurrency: 4,
      lockDurationMs: 30_000,
      stalledIntervalMs: 5_000,
      onWorkerLog: (_pid, line) => log.push(line),
      ...opts,
    });
    const result = await s.run();
    await s.close();
    return { result, log, pages: await bufferedPages(redis.url, task.name) };
  }

  it('gets all 60 entries by scrolling (to a count, and until the feed stops growing) and by "load more"; fills a search form', async () => {
    const { result, pages, log } = await crawl(writeTaskDir(taskYaml(site, 'actions')), {
      secretEnv: { CRAWL_STUDIO_QUERY: 'widget' },
    });
    // The one page whose action cannot be done fails as `action`, naming the step; no other page is lost.
    assert.equal(result.status.stats!.done, 5, log.join('\n'));
    assert.deepEqual(result.status.stats!.failures, { action: 1 });
    assert.ok(
      log.some((l) => l.includes('browser.actions[1] (click button.never): timed out after 1000 ms')),
      log.join('\n'),
    );
    assert.deepEqual(ids(pages, 'broken'), []);
    assert.deepEqual(ids(pages, 'plain'), ALL.slice(0, PER_LOAD), 'without actions, the first 20 only');
    assert.deepEqual(ids(pages, 'counted'), ALL, 'scrolled until 60 entries');
    assert.deepEqual(ids(pages, 'idle'), ALL, 'scrolled until the feed stopped growing');
    assert.deepEqual(ids(pages, 'clicked'), ALL, '"load more" clicked until it was gone');
    const results = pages.flatMap((p) => p.items.filter((i) => i.type === 'result').map((i) => i.data.text));
    assert.deepEqual(
      results,
      ['widget 3', 'widget 2', 'widget 1'],
      'the query from the environment, sorted as selected',
    );
    // Each feed loaded each batch once: nothing asked for twice, nothing past the end.
    // (The broken page loaded 0 and, clicked once, 20.)
    assert.deepEqual(
      [...site.loads].sort((a, b) => a - b),
      [0, 0, 0, 0, 0, 20, 20, 20, 20, 40, 40, 40],
    );
  });

  it('runs a workspace script only with --allow-scripts, and refuses the task without it, naming the line', async () => {
    const yaml = `name: scripted
start: [{ url: "${site.url}/more", rule: more }]
request: { timeout: 30s, retries: { attempts: 1 } }
rules:
  - name: more
    browser:
      waitFor: { selector: .entry }
      actions:
        - evaluate: scripts/expand.js
    items: ${ITEM('scripted')}
`;
    const file = writeTaskDir(yaml, { 'scripts/expand.js': EXPAND_SCRIPT });
    await assert.rejects(loadTaskFile(file, { allowScripts: false }), (err: unknown) => {
      assert.ok(err instanceof TaskFileError);
      assert.equal(err.diagnostics.length, 1);
      assert.equal(err.diagnostics[0]!.line, 9);
      assert.equal(err.diagnostics[0]!.path, 'rules[0].browser.actions[0].evaluate');
      assert.match(err.diagnostics[0]!.message, /--allow-scripts/);
      return true;
    });
    // The CLI says so before starting anything, with the file, line and field.
    const cli = await promisify(execFile)(process.execPath, [
      resolve('dist/cli.js'),
      'run',
      file,
      '--redis',
      redis.url,
    ]).then(
      () => null,
      (err: { code: number; stderr: string }) => err,
    );
    assert.ok(cli, 'run without --allow-scripts fails');
    assert.notEqual(cli.code, 0);
    assert.match(cli.stderr, /task\.crawl\.yaml:9:\d+.*rules\[0\]\.browser\.actions\[0\]\.evaluate.*--allow-scripts/);
    assert.deepEqual(site.loads, [], 'no page was rendered');

    const { result, pages } = await crawl(file, { allowScripts: true });
    assert.equal(result.status.stats!.failed, 0);
    assert.deepEqual(ids(pages, 'scripted'), ALL);
  });

  it('fixture save runs the actions: the fixture holds the DOM after them, the steps are printed; a script needs --allow-scripts', async () => {
    const yaml = `name: fixtures
start: [{ url: "${site.url}/feed", rule: feed }, { url: "${site.url}/more", rule: more }]
rules:
  - name: feed
    browser: { waitFor: { selector: .entry }, actions: [ { scroll: { selector: .entry, count: ${ENTRIES} } } ] }
    items: ${ITEM('entry')}
  - name: more
    browser: { waitFor: { selector: .entry }, actions: [ { evaluate: scripts/expand.js } ] }
    items: ${ITEM('entry')}
`;
    const file = writeTaskDir(yaml, { 'scripts/expand.js': EXPAND_SCRIPT });
    const cli = (args: string[]) =>
      promisify(execFile)(process.execPath, [resolve('dist/cli.js'), 'fixture', 'save', file, ...args]).then(
        (r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }),
        (e: { code: number; stdout: string; stderr: string }) => e,
      );
    let r = await cli([`${site.url}/feed`]);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /^ {2}action scroll \(\.entry until 60\): 60 elements in /m);
    assert.match(r.stdout, /rendered in a browser\): 60 items/);

    r = await cli([`${site.url}/more`]);
    assert.notEqual(r.code, 0, 'a script without --allow-scripts');
    assert.match(r.stderr, /task\.crawl\.yaml:8:\d+.*rules\[1\]\.browser\.actions\[0\]\.evaluate.*--allow-scripts/);
    r = await cli([`${site.url}/more`, '--allow-scripts']);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /^ {2}action evaluate scripts\/expand\.js: /m);
    assert.match(r.stdout, /rendered in a browser\): 60 items/);
  });

  it("the designer's preview runs the actions and reports each step", async () => {
    const file = writeTaskDir(taskYaml(site, 'preview'));
    const task = await loadTaskFile(file);
    const source = new PageSource(mkdtempSync(join(tmpdir(), 'cs-actions-preview-')));
    try {
      const loaded = await source.load(`${site.url}/feed?by=count`, task, {
        refetch: true,
        browser: { rule: 'scroll-count', path: undefined },
      });
      assert.equal((loaded.page.html.match(/class="entry"/g) ?? []).length, ENTRIES);
      assert.equal(loaded.meta.actions?.length, 1);
      assert.match(loaded.meta.actions[0]!, /^scroll \(\.entry until 60\): 60 elements in /);

      // A step that fails says which, and the steps before it.
      const broken = await loadTaskFile(
        writeTaskDir(
          taskYaml(site, 'preview2').replace(
            '- click: { selector: button.more, untilGone: true, max: 10 }',
            '- click: { selector: button.more, untilGone: true, max: 10 }\n        - click: { selector: button.never, timeout: 1s }',
          ),
        ),
      );
      await assert.rejects(
        source.load(`${site.url}/more`, broken, { refetch: true, browser: { rule: 'load-more', path: undefined } }),
        (err: Error) => {
          assert.match(err.message, /browser\.actions\[1\] \(click button\.never\): timed out after 1000 ms/);
          assert.match(
            err.message,
            /Actions: click button\.more until gone: 2 clicks in .*; click button\.never: failed after /,
          );
          return true;
        },
      );
    } finally {
      await closePreviewBrowser();
    }
  });
});

// Issue 30's acceptance: the same feeds behind a login a script builds (its CSRF token fetched by the script), each
// page answering 429 with Retry-After first, crawled with a pool of sessions and with a session and the login.
describe('page actions with sessions, a script-built login and 429s (real Chromium, real Redis, worker processes)', function () {
  this.timeout(180_000);
  const RETRY_AFTER_S = 1;
  /** Date.now() is whole milliseconds on both sides: a gap measured at the server may read a millisecond short. */
  const CLOCK_GRANULARITY_MS = 2;
  const USER = 'ann';
  const PASSWORD = 'Feed-Pw-2291';
  let redis: RedisServer;
  let site: ActionSite;

  before(function () {
    browserOrSkip(this);
  });
  beforeEach(async () => {
    redis = await startRedis();
  });
  afterEach(async () => {
    await site?.close();
    await redis?.stop();
  });

  function yaml(name: string, access: string): string {
    return `name: ${name}
start:
  - { url: "${site.url}/feed?by=count", rule: scroll-count }
  - { url: "${site.url}/feed?by=idle", rule: scroll-idle }
  - { url: "${site.url}/more", rule: load-more }
request: { timeout: 30s, retries: { attempts: 3, delay: 10ms } }
${access}
rules:
  - name: scroll-count
    browser: { waitFor: { selector: .entry }, actions: [ { scroll: { selector: .entry, count: ${ENTRIES} } } ] }
    items: ${ITEM('counted')}
  - name: scroll-idle
    browser: { waitFor: { selector: .entry }, actions: [ { scroll: { selector: .entry } } ] }
    items: ${ITEM('idle')}
  - name: load-more
    browser: { waitFor: { selector: .entry }, actions: [ { click: { selector: button.more, untilGone: true } } ] }
    items: ${ITEM('clicked')}
`;
  }

  async function crawlAndCheck(file: string, secretEnv: Record<string, string> = {}) {
    const task = await loadTaskFile(file);
    const log: string[] = [];
    const s = session(task, redis.url, {
      workers: 1,
      concurrency: 4,
      lockDurationMs: 30_000,
      stalledIntervalMs: 5_000,
      secretEnv,
      onWorkerLog: (_pid, line) => log.push(line),
    });
    const result = await s.run();
    await s.close();
    const pages = await bufferedPages(redis.url, task.name);
    assert.equal(result.status.stats!.failed, 0, log.join('\n'));
    assert.equal(result.status.stats!.done, 3, 'no page lost');
    for (const type of ['counted', 'idle', 'clicked'])
      assert.deepEqual(ids(pages, type), ALL, `${type}: all 60 entries`);
    const early: string[] = [];
    for (const [path, hits] of site.requests) {
      assert.equal(hits[0]!.status, 429, `${path} was answered 429 first (the case under test)`);
      for (let i = 1; i < hits.length; i++) {
        const gap = hits[i]!.at - hits[i - 1]!.at;
        if (hits[i - 1]!.status === 429 && gap < RETRY_AFTER_S * 1000 - CLOCK_GRANULARITY_MS)
          early.push(`${path}: ${gap} ms after its 429`);
      }
    }
    assert.deepEqual(early, [], 'no retry before its Retry-After');
    return log;
  }

  it('with session: { pool: 4 }', async () => {
    site = await serveActionSite({ retryAfterS: RETRY_AFTER_S });
    await crawlAndCheck(writeTaskDir(yaml('pool', 'session: { pool: 4 }')));
  });

  it('with a session and a login in the browser, its form built by a script', async () => {
    site = await serveActionSite({ retryAfterS: RETRY_AFTER_S, login: { user: USER, password: PASSWORD } });
    const login = `session: { pool: 1 }
login:
  url: ${site.url}/login
  browser: true
  form:
    fields: { '#user': '\${CRAWL_STUDIO_SITE_USER}', '#password': '\${CRAWL_STUDIO_SITE_PASSWORD}' }
    submit: '#go'
  check: { selector: .logout }`;
    await crawlAndCheck(writeTaskDir(yaml('login', login)), {
      CRAWL_STUDIO_SITE_USER: USER,
      CRAWL_STUDIO_SITE_PASSWORD: PASSWORD,
    });
    assert.equal(site.logins(), 1, 'one session, one login: a 429 is a wait, not a block');
  });
});
