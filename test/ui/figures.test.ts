import * as assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FrameLocator, Locator, Page } from 'playwright-core';
import { openWorkbench, type Workbench } from '../extension/harness';
import {
  clearToasts,
  codeLens,
  explorerItem,
  keepFailureArtifacts,
  openCommandPalette,
  paletteRow,
  quickInput,
  row,
  runCommand,
  showCrawlStudio,
  viewPane,
  waitForCodeLens,
  waitForWorkbench,
  webview,
} from './support/workbench';
import { quotesTask, renderQuotesPage, serveQuotes, TROUBLES, type QuotesServer } from '../support/quotesSite';
import { parseTask } from '../../src/core/task/parse';
import { saveFixture } from '../../src/workspace/fixtureStore';
import { until } from '../support/until';

// Issue 32 in the real workbench, on the quotes site with the tester's troubles (a 404, a 500, a page robots.txt
// forbids, a slow page, off-site links): one crawl, read in every view.
// - Item 3: paused mid-crawl, every figure shown in two places reads the same in the dashboard, the Queue Explorer,
//   the Workers view and the status bar (a per-worker rate is labelled as its own window); again once finished.
// - Item 7: the finish message and the dashboard's "Links dropped" card give the run's dropped links by reason; Find
//   URL gives an off-site URL's drop reason with the run's count, and a failed page's attempts as the explorer does;
//   Results opens on the item type the task declares first (quote), not the alphabetically first (author); each
//   validate error is listed once in Problems (the task's copy and the editor's were both listed); a failing
//   fixture's diff puts the changed field first on its lines (not the item's 85-character quote) and its marker sits
//   on the field's line of the task file (not line 1).
// Screenshots: test-artifacts/ui/figures-*.png.

/**
 * Clicks a tree row's inline action (the icon shown on hover), until `done` says it took: the live tree re-renders
 * its rows under the pointer and a click can land on a row that is being replaced.
 */
async function rowAction(page: Page, target: Locator, label: string, done: () => Promise<boolean>): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    await target.hover();
    await target
      .locator(`.action-label[aria-label^="${label}"]`)
      .first()
      .click({ timeout: 5_000 })
      .catch(() => undefined);
    const took = await until(label, done, 5_000, 250).then(
      () => true,
      () => false,
    );
    if (took) return;
    if (attempt >= 3)
      throw new Error(`the row's '${label}' action did not take: ${JSON.stringify(await target.innerText())}`);
  }
}

/** A number as the views print it ("1,234" → 1234). */
const num = (s: string) => Number(s.replace(/,/g, ''));

/** The figures of one dashboard read: the counters' values and details by label. */
async function dashboardFigures(wv: FrameLocator): Promise<Map<string, { value: string; detail: string }>> {
  const kpis = await wv.locator('.kpis .kpi').evaluateAll((els) =>
    els.map((e) => ({
      label: e.querySelector<HTMLElement>('.label')?.innerText.trim() ?? '',
      value: e.querySelector<HTMLElement>('.value')?.innerText.trim() ?? '',
      detail: e.querySelector<HTMLElement>('.detail')?.innerText.trim() ?? '',
    })),
  );
  return new Map(kpis.map((k) => [k.label, { value: k.value, detail: k.detail }]));
}

interface Views {
  readonly dashboard: Map<string, { value: string; detail: string }>;
  /** The Queue Explorer's row of the task: "paused · 5 waiting · 0 active · 2 failed · 1 skipped". */
  readonly explorer: string;
  /** The status bar's item: "quotes 0.4 p/s · queue 5 · 2 failed" ('' when it is hidden). */
  readonly statusBar: string;
}

/** Two validate errors: a task name with a space (line 1), a selector that does not parse (line 6). */
const BROKEN_TASK =
  'name: Bad Name\nstart: [https://example.com/]\nrules:\n  - name: list\n    follow:\n      - { selector: "a[", to: list }\n';

/** The fixture task: quotes keyed by their text, so an item's label is a whole quote. Its fields are on line 9. */
const FX_TASK = [
  'name: fx',
  'start: [http://fx.test/]',
  'rules:',
  '  - name: list',
  '    items:',
  '      - type: quote',
  '        scope: div.quote',
  '        key: [text]',
  '        fields: { text: span.text, author: small.author }',
  '',
].join('\n');
const FX_FIELDS_LINE = 9;

/** A fixture of the quotes site's first page, then the page as it reads now: the first quote's author renamed. */
async function writeFixtures(file: string): Promise<void> {
  writeFileSync(file, FX_TASK);
  const { task } = parseTask(FX_TASK, file);
  const html = renderQuotesPage('/')!.body;
  const saved = await saveFixture(
    file,
    task!,
    { url: 'http://fx.test/', finalUrl: 'http://fx.test/', html, status: 200, fetchedAt: new Date().toISOString() },
    'list',
    0,
  );
  const page = saved.replace(/\.json$/, '.html');
  const now = readFileSync(page, 'utf8').replace('>Jane Austen</small>', '>J. Austen</small>');
  assert.ok(now.includes('>J. Austen</small>'));
  writeFileSync(page, now);
}

describe('One figure everywhere, and the smaller items of issue 32 (UI, quotes site)', function () {
  this.timeout(300_000);
  let wb: Workbench;
  let site: QuotesServer;

  before(async function () {
    this.timeout(180_000);
    // 8 list pages, 12 authors and the troubles (~25 pages), one at a time 600 ms apart: ~15 s by the clock,
    // whatever the machine's load, so the crawl is paused mid-way.
    site = await serveQuotes({ troubles: true, pages: 8, slowMs: 1_500 });
    const folder = mkdtempSync(join(tmpdir(), 'cs-ui-figures-'));
    writeFileSync(
      join(folder, 'quotes.crawl.yaml'),
      quotesTask({ name: 'quotes', siteUrl: site.url, perHost: { concurrency: 1, delay: '600ms' } }),
    );
    writeFileSync(join(folder, 'broken.crawl.yaml'), BROKEN_TASK);
    await writeFixtures(join(folder, 'fx.crawl.yaml'));
    wb = await openWorkbench({
      workspaceFolder: folder,
      settings: {
        'crawlStudio.workers': 1,
        'crawlStudio.refreshInterval': 500,
        // The failure's peek, with its diff, opens wherever the failure is (a person clicks the failure for it).
        'testing.automaticallyOpenPeekView': 'failureAnywhere',
      },
    });
    await waitForWorkbench(wb.page, { file: 'quotes.crawl.yaml' });
  });

  afterEach(async function () {
    await keepFailureArtifacts(this, wb);
  });

  after(async () => {
    await wb?.close();
    await site?.close();
  });

  const queueRow = (page: Page) => row(viewPane(page, 'Queue Explorer'), /^quotes/);
  const statusItem = (page: Page) =>
    page.locator('.statusbar-item', { hasText: /quotes (paused · )?[\d.]+ p\/s/ }).first();

  async function readViews(page: Page): Promise<Views> {
    const status = statusItem(page);
    return {
      dashboard: await dashboardFigures(webview(page)),
      explorer: await queueRow(page).innerText(),
      statusBar: (await status.count()) ? await status.innerText() : '',
    };
  }

  /** What differs between the views' figures ([] when every figure shown twice reads the same). */
  function disagreements(v: Views, withStatusBar: boolean): string[] {
    const d = (label: string) => v.dashboard.get(label) ?? { value: '?', detail: '?' };
    const out: string[] = [];
    const queue = d('Queue');
    // The explorer's row is the queue in the dashboard's words, then the failed and skipped pages.
    if (!v.explorer.includes(queue.detail)) out.push(`queue: dashboard '${queue.detail}', explorer '${v.explorer}'`);
    const failed = num(d('Failed').value);
    const explorerFailed = Number(/(\d+) failed/.exec(v.explorer)?.[1] ?? 0);
    if (explorerFailed !== failed) out.push(`failed: dashboard ${failed}, explorer ${explorerFailed}`);
    const skipped = num(d('Skipped').value);
    const explorerSkipped = Number(/(\d+) skipped/.exec(v.explorer)?.[1] ?? 0);
    if (explorerSkipped !== skipped) out.push(`skipped: dashboard ${skipped}, explorer ${explorerSkipped}`);
    if (!withStatusBar) return out;
    // Paused, it says so first (the explorer's row says it too).
    const m = /quotes (paused · )?([\d.]+) p\/s · queue (\d+) · (\d+) failed/.exec(v.statusBar);
    if (!m) return [...out, `status bar: '${v.statusBar}'`];
    if (Boolean(m[1]) !== /paused · /.test(v.explorer))
      out.push(`paused: explorer '${v.explorer}', status bar '${v.statusBar}'`);
    if (m[2] !== d('Pages / s').value) out.push(`pages/s: dashboard ${d('Pages / s').value}, status bar ${m[2]}`);
    if (Number(m[3]) !== num(queue.value)) out.push(`queue: dashboard ${queue.value}, status bar ${m[3]}`);
    if (Number(m[4]) !== failed) out.push(`failed: dashboard ${failed}, status bar ${m[4]}`);
    return out;
  }

  it('reads the same figures in the dashboard, the Queue Explorer, the Workers view and the status bar (paused mid-crawl)', async () => {
    const { page } = wb;
    await explorerItem(page, 'quotes.crawl.yaml').click();
    const lens = codeLens(page, 'Start Crawl');
    await lens.waitFor({ state: 'visible', timeout: 30_000 });
    await lens.click();
    await waitForCodeLens(page, 'Stop Crawl');
    await showCrawlStudio(page);
    const queue = queueRow(page);
    await queue.waitFor({ state: 'visible', timeout: 60_000 });
    // Some pages in (the list's first pages lead to the rest), then paused.
    const pagesServed = () => [...site.hits.keys()].filter((p) => p !== '/robots.txt').length;
    await until('a few pages fetched', () => pagesServed() >= 4, 60_000, 100);
    // Paused, the figures hold still: the pages in flight finish, then nothing moves, and the rate is the run's
    // average over its crawling time (the paused time left out), the same whenever a view reads it.
    await rowAction(page, queue, 'Pause Queue', async () => /paused · /.test(await queue.innerText()));
    await runCommand(page, 'Crawl Studio: Open Dashboard');
    const wv = webview(page);
    await wv.locator('.kpis .kpi').first().waitFor({ timeout: 60_000 });
    // Each view refreshes on its own clock: wait until they have all caught up with the paused run, then compare.
    let views = await readViews(page);
    await until(
      'the views to agree on the paused run',
      async () => {
        views = await readViews(page);
        return disagreements(views, true).length === 0 && views.dashboard.get('ETA')?.value === 'paused';
      },
      60_000,
      500,
    ).catch(() => undefined);
    assert.deepEqual(disagreements(views, true), [], JSON.stringify({ ...views, dashboard: [...views.dashboard] }));
    assert.ok(num(views.dashboard.get('Pages done')!.value) > 0, 'the crawl was paused mid-way, after some pages');
    assert.ok(num(views.dashboard.get('Queue')!.value) > 0, 'the crawl was paused mid-way, with pages left');
    assert.equal(views.dashboard.get('ETA')?.value, 'paused', 'no ETA while paused');
    // The rate's window is named, and the status bar's tooltip names the same one with the same figures.
    const rate = views.dashboard.get('Pages / s')!;
    assert.match(rate.detail, /average over the run/);
    await statusItem(page).hover();
    const hover = page.locator('.monaco-hover:visible, .workbench-hover:visible', { hasText: 'quotes:' }).first();
    await hover.waitFor({ timeout: 15_000 });
    const tip = await hover.innerText();
    assert.ok(tip.includes(`${rate.value} pages/s (average over the run)`), `tooltip: ${tip}`);
    assert.ok(tip.includes(`${views.dashboard.get('Pages done')!.value} done`), `tooltip: ${tip}`);
    assert.ok(tip.includes(views.dashboard.get('Queue')!.detail), `tooltip: ${tip}`);
    await page.mouse.move(0, 0);
    // A worker's own rate is over its own window, labelled so: between its last two heartbeats, in both views.
    const workerRow = row(viewPane(page, 'Workers'), /^PID \d+/);
    await workerRow.waitFor({ timeout: 30_000 });
    const dashWorkers = wv.locator('section[aria-label="Workers"]');
    assert.match(await dashWorkers.locator('th', { hasText: 'pages/s' }).innerText(), /last beat/);
    const treeRate = async () => /([\d.]+) p\/s/.exec(await workerRow.innerText())?.[1];
    const dashRate = async () => {
      const cells = await dashWorkers.locator('tbody tr').first().locator('td').allInnerTexts();
      return cells[5];
    };
    await until('the worker rate to agree', async () => (await treeRate()) === (await dashRate()), 30_000, 500).catch(
      () => undefined,
    );
    assert.equal(await treeRate(), await dashRate(), "the worker's rate in the Workers view and on the dashboard");
    // The same worker in both: the dashboard names it host:pid.
    const pid = /^PID (\d+)/.exec(await workerRow.innerText())?.[1];
    assert.match(await dashWorkers.locator('tbody tr td').first().innerText(), new RegExp(`:${pid}$`));
    await wb.screenshot('ui/figures-1-paused-side-by-side.png');
    // Item 7: a worker's crash toast says why it died, not its start-up line ("worker started …", which the toast
    // used to quote). Killed from outside, it printed nothing: the toast says so. The supervisor replaces it.
    await clearToasts(page);
    process.kill(Number(pid), 'SIGKILL');
    const crash = page.locator('.notification-toast', { hasText: `worker ${pid} exited unexpectedly` }).first();
    await crash.waitFor({ state: 'visible', timeout: 60_000 });
    const said = await crash.innerText();
    assert.match(said, /exited unexpectedly \(SIGKILL\): killed by SIGKILL, it printed no error/, said);
    assert.doesNotMatch(said, /worker started/, said);
    await wb.screenshot('ui/figures-1b-worker-crash-toast.png');
    await clearToasts(page);
    await until(
      'a new worker in place of the killed one',
      async () => {
        const rows = await viewPane(page, 'Workers').locator('.monaco-list-row').allInnerTexts();
        return rows.some((t) => /^PID \d+/.test(t) && !t.startsWith(`PID ${pid}`));
      },
      60_000,
      500,
    );
    await rowAction(page, queue, 'Resume Queue', async () => !/paused · /.test(await queue.innerText()));
  });

  it('says the dropped links by reason in the finish message and on the dashboard, the troubles each in its place', async () => {
    const { page } = wb;
    const finished = page.locator('.notification-toast', { hasText: "Crawl 'quotes' finished" }).first();
    await finished.waitFor({ state: 'visible', timeout: 180_000 });
    // Each list page's footer links off-site twice, the first page's list of troubles once more.
    assert.match(await finished.innerText(), /17 links dropped \(offsite: 17\)/);
    await wb.screenshot('ui/figures-2-finish-message.png');
    const wv = webview(page);
    await wv.locator('.state.finished').waitFor({ timeout: 60_000 });
    const card = wv.locator('.kpi', { has: wv.locator('.label', { hasText: /^Links dropped$/ }) });
    await until(
      'the finished figures on the dashboard',
      async () => (await card.locator('.value').innerText()) === '17',
      30_000,
      250,
    );
    assert.match(await card.locator('.detail').innerText(), /offsite: 17/);
    const failures = wv.locator('section[aria-label="Failures by cause"]');
    await failures.locator('tr', { hasText: 'HTTP 500' }).waitFor({ timeout: 20_000 });
    assert.match(await failures.locator('tr', { hasText: 'HTTP 404' }).innerText(), /Anonymous-Author/);
    assert.match(await failures.locator('tr', { hasText: 'HTTP 500' }).innerText(), /random/);
    assert.match(await wv.locator('section[aria-label="Skipped pages"]').innerText(), /robots\.txt\s+1/);
    assert.equal(site.hits.get(TROUBLES.forbidden), undefined, 'the forbidden page was never requested');
    assert.equal(site.hits.get(TROUBLES.slow), 1, 'the slow page was fetched');
    // Finished, the dashboard and the Queue Explorer still agree (the status bar shows running crawls only).
    let views = await readViews(page);
    await until('the views to agree on the finished run', async () => {
      views = await readViews(page);
      return disagreements(views, false).length === 0 && /2 failed/.test(views.explorer);
    }).catch(() => undefined);
    assert.deepEqual(disagreements(views, false), [], JSON.stringify({ ...views, dashboard: [...views.dashboard] }));
    // 8 list pages, 12 authors and the slow one; 2 failed (the 404, the 500); robots.txt's page skipped.
    assert.equal(views.dashboard.get('Pages done')?.value, '21');
    assert.equal(views.dashboard.get('Failed')?.value, '2');
    assert.equal(views.dashboard.get('Skipped')?.value, '1');
    await clearToasts(page);
    await wb.screenshot('ui/figures-3-finished-dashboard.png');
  });

  async function findUrl(page: Page, url: string): Promise<string[]> {
    // From the task file's editor, Find URL searches its task (from elsewhere it asks which).
    await page.locator('.tabs-container .tab', { hasText: 'quotes.crawl.yaml' }).first().click();
    await openCommandPalette(page, 'Crawl Studio: Find URL');
    await paletteRow(page, 'Crawl Studio: Find URL…').click();
    const input = quickInput(page).locator('input.input').first();
    await input.waitFor({ state: 'visible' });
    // The palette's text goes once the input box replaces it: then the URL is typed alone.
    await until('the URL input box', async () => (await input.inputValue()) === '', 30_000, 100);
    await input.fill(url);
    await input.press('Enter');
    const rows = quickInput(page).locator('.monaco-list-row');
    await until('the findings', async () => (await quickInput(page).innerText()).includes(`in 'quotes'`), 30_000);
    await rows.first().waitFor({ state: 'visible' });
    return rows.allInnerTexts();
  }

  it("Find URL gives an off-site URL's drop reason with the run's count, and a failed page's attempts as the explorer", async () => {
    const { page } = wb;
    const offsite = await findUrl(page, TROUBLES.offsite);
    const texts = offsite.join('\n');
    assert.match(texts, /out of scope: offsite/);
    assert.match(texts, /links to it are dropped as offsite \(the run dropped 17 offsite links so far\)/);
    assert.doesNotMatch(texts, /no page (has )?linked to it/);
    await wb.screenshot('ui/figures-4-find-url-offsite.png');
    await page.keyboard.press('Escape');

    const broken = (await findUrl(page, `${site.url}${TROUBLES.serverError}`)).join('\n');
    const attempts = /failed \((attempt \d+\/\d+)\)/.exec(broken)?.[1];
    assert.equal(attempts, 'attempt 2/2', broken);
    await page.keyboard.press('Escape');
    await showCrawlStudio(page);
    const explorer = viewPane(page, 'Queue Explorer');
    if (!(await row(explorer, /^failed/).isVisible())) await queueRow(page).click();
    await row(explorer, /^failed/).click();
    const job = row(explorer, 'random');
    await job.waitFor({ state: 'visible', timeout: 15_000 });
    assert.match(await job.innerText(), new RegExp(`${attempts} · HTTP 500`), 'the same attempts in the explorer');
    await wb.screenshot('ui/figures-5-failed-job-attempts.png');
  });

  it('opens Results on the item type the task declares first', async () => {
    const { page } = wb;
    // From the task file's editor, as its lens does (the palette: the lenses may be re-drawing as the run ends).
    await page.locator('.tabs-container .tab', { hasText: 'quotes.crawl.yaml' }).first().click();
    await runCommand(page, 'Crawl Studio: Open Results');
    const wv = webview(page);
    await wv.locator('.row:not(.loading)').first().waitFor({ state: 'visible', timeout: 60_000 });
    const type = wv.locator('select[aria-label="Item type"]');
    assert.equal(await type.inputValue(), 'quote', 'quote is declared first; author comes first alphabetically');
    assert.deepEqual((await type.locator('option').allInnerTexts()).sort(), ['author', 'quote']);
    assert.match(await wv.locator('.toolbar .count').first().innerText(), /\b80 items\b/);
    await wb.screenshot('ui/figures-6-results-first-type.png');
  });

  it('lists each validate error once in Problems, the file open, after the validate task ran', async () => {
    const { page } = wb;
    await runCommand(page, 'View: Show Explorer');
    await explorerItem(page, 'broken.crawl.yaml').click();
    // The task, as Run Task runs it: its type, then the task.
    await openCommandPalette(page, 'Tasks: Run Task');
    await paletteRow(page, 'Tasks: Run Task').click();
    await row(quickInput(page), /crawl-studio/).click();
    await row(quickInput(page), 'validate broken.crawl.yaml').click();
    // Asked how to scan its output (a task with no matcher chosen yet): as it is contributed.
    const scan = row(quickInput(page), /Continue without scanning|crawl-studio/);
    if (await scan.isVisible()) await scan.click();
    // The task has ended (its copy of the problems, and its matcher's, are in by then), as its terminal says.
    // The task has ended (its problems, and its matcher's, are in by then): its terminal's tab says so, failed.
    await page
      .locator('.part.panel .single-terminal-tab', { hasText: 'validate broken.crawl.yaml' })
      .locator('.codicon-error')
      .waitFor({ timeout: 60_000 });
    // The Problems tab of the panel (the task's terminal is in front, and takes the keyboard's Ctrl+Shift+M).
    await page
      .locator('.part.panel .composite-bar .action-item', { hasText: /problems/i })
      .first()
      .click();
    const markers = page.locator('.markers-panel .monaco-list-row');
    const messages = async () =>
      (await markers.allInnerTexts()).filter((t) => !/^\s*broken\.crawl\.yaml/.test(t)).map((t) => t.trim());
    await until('both errors in Problems', async () => (await messages()).length >= 2, 60_000, 250);
    const listed = await messages();
    assert.equal(new Set(listed).size, listed.length, `an error listed twice:\n${listed.join('\n')}`);
    assert.equal(listed.length, 2, listed.join('\n'));
    assert.ok(
      listed.some((t) => /name/i.test(t) && /\[Ln 1,/.test(t)),
      listed.join('\n'),
    );
    assert.ok(
      listed.some((t) => /selector/i.test(t) && /\[Ln 6,/.test(t)),
      listed.join('\n'),
    );
    await wb.screenshot('ui/figures-7-problems-once.png');
  });

  it("shows a failing fixture's changed field first on the diff's lines, and its marker on the field's line", async () => {
    const { page } = wb;
    await runCommand(page, 'View: Show Explorer');
    await explorerItem(page, 'fx.crawl.yaml').click();
    // The Testing view lists the task file's fixtures once it has looked for them.
    await page.locator('.activitybar .action-item a[aria-label^="Testing"]').first().click();
    const tests = page.locator('.test-explorer .monaco-list-row');
    await tests.first().waitFor({ state: 'visible', timeout: 30_000 });
    await until(
      'the fixture in the Testing view',
      async () => /\bfx\b/.test((await tests.allInnerTexts()).join('\n')),
      30_000,
      250,
    );
    await runCommand(page, 'Test: Run All Tests');
    const peek = page.locator('.test-output-peek').first();
    await peek.waitFor({ state: 'visible', timeout: 60_000 });
    const diff = peek.locator('.monaco-diff-editor').first();
    await diff.waitFor({ state: 'visible', timeout: 30_000 });
    const lines = async (side: 'original' | 'modified') =>
      (await diff.locator(`.editor.${side} .view-line`).allInnerTexts()).map((t) => t.replace(/\u00a0/g, ' '));
    await until('the diff', async () => (await lines('original')).length > 0, 30_000, 250);
    const expected = await lines('original');
    const actual = await lines('modified');
    assert.ok(
      expected.some((l) => l.startsWith('author: "Jane Austen"   (quote')),
      expected.join('\n'),
    );
    assert.ok(
      actual.some((l) => l.startsWith('author: "J. Austen"   (quote')),
      actual.join('\n'),
    );
    // The marker: the failure's widget ("author: … != author: …", the field first) sits at the line of `fields:`,
    // where the changed field is declared, not line 1: the editor places both at the same height.
    const widget = page.locator('.editor-group-container .test-error-content-widget').first();
    await widget.waitFor({ timeout: 30_000 });
    assert.match(await widget.innerText(), /^author: "J\. Au.*!= author: "Jane/);
    const marked = await widget.evaluate((w) => {
      const top = (w as HTMLElement).style.top;
      const lines = w.closest('.lines-content')?.querySelectorAll<HTMLElement>('.view-line') ?? [];
      return (
        Array.from(lines)
          .find((l) => l.style.top === top)
          ?.innerText.replace(/\u00a0/g, ' ') ?? null
      );
    });
    assert.match(marked ?? '', /^\s*fields: \{ text: span\.text, author: small\.author \}/, String(marked));
    assert.equal(FX_TASK.split('\n')[FX_FIELDS_LINE - 1]!.trim().startsWith('fields:'), true);
    await wb.screenshot('ui/figures-8-fixture-diff.png');
  });

  it('after a Retry all and after a Stop, the dashboard and the Queue Explorer still agree', async () => {
    const { page } = wb;
    // The task's editor was closed by the tests before: opened again from the Explorer, for the commands and lens.
    await runCommand(page, 'View: Show Explorer');
    await explorerItem(page, 'quotes.crawl.yaml').click();
    const quotesTab = page.locator('.tabs-container .tab', { hasText: 'quotes.crawl.yaml' }).first();
    await quotesTab.waitFor({ timeout: 30_000 });
    await runCommand(page, 'Crawl Studio: Open Dashboard');
    const wv = webview(page);
    await wv.locator('.state.finished').waitFor({ timeout: 60_000 });
    await showCrawlStudio(page);
    const agreeing = async (what: string, also: (v: Views) => boolean): Promise<Views> => {
      let views = await readViews(page);
      await until(what, async () => {
        views = await readViews(page);
        return disagreements(views, false).length === 0 && also(views);
      }).catch(() => undefined);
      assert.deepEqual(disagreements(views, false), [], JSON.stringify({ ...views, dashboard: [...views.dashboard] }));
      return views;
    };
    // Retry all of the 500 (it fails again, twice more): the run reopens, then finishes with the same 2 failed.
    const before = site.hits.get(TROUBLES.serverError) ?? 0;
    const failures = wv.locator('section[aria-label="Failures by cause"]');
    const retryAll = failures.locator('tr', { hasText: 'HTTP 500' }).locator('vscode-button', { hasText: 'Retry all' });
    // The dashboard is posted a snapshot every second: one that changes nothing must leave its buttons in place. A
    // button replaced between a click's press and its release got neither, and on a busy machine Retry all did
    // nothing (CI, 2026-12-06).
    const button = await retryAll.elementHandle();
    await wv.locator('#app').evaluate(
      () =>
        new Promise<void>((resolve) => {
          let snapshots = 0;
          window.addEventListener('message', (e: MessageEvent<{ type?: string }>) => {
            if (e.data?.type === 'data' && ++snapshots === 2) resolve();
          });
        }),
    );
    assert.equal(
      await button.evaluate((b) => b.isConnected),
      true,
      'Retry all re-rendered by snapshots that changed nothing',
    );
    await retryAll.click();
    const start = page.locator('.notifications-toasts .monaco-button', { hasText: 'Start Crawl' }).first();
    await start.waitFor({ timeout: 30_000 });
    await start.click();
    await until('the 500 asked again', () => (site.hits.get(TROUBLES.serverError) ?? 0) >= before + 2, 120_000, 200);
    await wv.locator('.state.finished').waitFor({ timeout: 120_000 });
    const retried = await agreeing('the views to agree after the retry', (v) => /2 failed/.test(v.explorer));
    assert.equal(retried.dashboard.get('Failed')?.value, '2');
    await clearToasts(page);
    await wb.screenshot('ui/figures-9-after-retry.png');
    // A new run (Start after a finish starts one), stopped a few pages in: both views say the stopped run's figures.
    const served = () => [...site.hits.values()].reduce((a, b) => a + b, 0);
    const atStart = served();
    await quotesTab.click();
    await codeLens(page, 'Start Crawl').click();
    await waitForCodeLens(page, 'Stop Crawl');
    await until('a few pages of the new run', () => served() >= atStart + 4, 60_000, 100);
    await clearToasts(page);
    await codeLens(page, 'Stop Crawl').click();
    await waitForCodeLens(page, 'Start Crawl');
    // Item 1: one message for the Stop, which says "stopped" and what Start does next, and no "finished".
    const toasts = page.locator('.notifications-toasts .notification-toast');
    await toasts.filter({ hasText: "Crawl 'quotes' stopped" }).first().waitFor({ timeout: 60_000 });
    assert.match(
      (await toasts.filter({ hasText: "Crawl 'quotes' stopped" }).allInnerTexts()).join('\n'),
      /Start Crawl begins a new run from the start URLs/,
    );
    await wb.screenshot('ui/figures-10-stop-message.png');
    await runCommand(page, 'Crawl Studio: Open Dashboard');
    await wv.locator('.state.stopped').waitFor({ timeout: 60_000 });
    // Counted in the Notifications center: VS Code hides an info toast after ~15 s, and on a busy machine opening the
    // dashboard took longer than that (CI, 2026-12-07: the toast was gone, the count 0). The center keeps every
    // message not closed, and the toasts were closed before the Stop.
    await runCommand(page, 'Notifications: Show Notifications');
    const messages = page.locator('.notifications-center .notification-list-item');
    await messages.filter({ hasText: "Crawl 'quotes' stopped" }).first().waitFor({ timeout: 30_000 });
    assert.equal(await messages.filter({ hasText: "Crawl 'quotes' stopped" }).count(), 1, 'one message for the Stop');
    assert.equal(await messages.filter({ hasText: /finished/ }).count(), 0, 'no "finished" for a Stop');
    await runCommand(page, 'Notifications: Hide Notifications');
    const stopped = await agreeing('the views to agree after the stop', () => true);
    assert.ok(num(stopped.dashboard.get('Pages done')!.value) > 0, 'the stopped run fetched pages');
    const runId = async () => /^run (\S+)/.exec(await wv.locator('span.meta').first().innerText())?.[1];
    const stoppedRun = await runId();
    assert.ok(stoppedRun, 'the dashboard names the stopped run');
    await clearToasts(page);
    await wb.screenshot('ui/figures-11-after-stop.png');
    // Start after the Stop begins a new run from the start URLs: the start page is fetched again.
    const startHits = site.hits.get('/') ?? 0;
    await quotesTab.click();
    await codeLens(page, 'Start Crawl').click();
    await until('the start page fetched again by a new run', () => (site.hits.get('/') ?? 0) > startHits, 60_000, 100);
    await waitForCodeLens(page, 'Stop Crawl');
    await codeLens(page, 'Stop Crawl').click();
    await waitForCodeLens(page, 'Start Crawl');
    await runCommand(page, 'Crawl Studio: Open Dashboard');
    await until(
      'the dashboard to show the new run',
      async () => ((await runId()) ?? stoppedRun) !== stoppedRun,
      60_000,
      250,
    );
  });
});
