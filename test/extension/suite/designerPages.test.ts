import * as assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as vscode from 'vscode';
import type { PanelSnapshot } from '../../../src/extension/designer/previewPanel';
import { extractPage } from '../../../src/core/extract/extract';
import { parseTask } from '../../../src/core/task/parse';
import { openStore } from '../../../src/store/open';
import { book, DEMO_SITE, serveSite, type SiteServer } from '../../../src/demo/site';
import { urlFacts } from '../../support/pageFacts';
import { author, quotesOn, serveQuotes, type QuotesServer } from '../../support/quotesSite';

// Issue 32, items 5 and 6, in a real VS Code against sites served here: New Task File on a list page writes a task
// whose items are the listed things (the Demo Shop's books with their prices, the quotes site's quotes) and whose
// detail rule reads a detail page's main content; the Preview lens of a rule opens a page that rule handles and
// says which, and the "matches 0 elements" warnings computed on it name it and go when the preview closes.

const C = {
  open: 'crawlStudio.designer.openPreview',
  state: 'crawlStudio.designer._state',
  newTask: 'crawlStudio.designer.newTaskFile',
};

async function until<T>(what: string, probe: () => T | Promise<T>, timeoutMs = 20_000): Promise<NonNullable<T>> {
  const end = Date.now() + timeoutMs;
  let last: T | undefined;
  for (;;) {
    last = await probe();
    if (last) return last;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

const snap = (uri: vscode.Uri) => vscode.commands.executeCommand<PanelSnapshot | null>(C.state, uri);

async function page(url: string): Promise<string> {
  const res = await fetch(url);
  assert.equal(res.status, 200, url);
  return res.text();
}

describe('designer: New Task File items and the Preview lens (issue 32)', function () {
  this.timeout(90_000);
  let shop: SiteServer;
  let quotes: QuotesServer;
  let dir: string;

  before(async () => {
    await vscode.extensions.getExtension('crawl-studio.crawl-studio')!.activate();
    shop = await serveSite(DEMO_SITE);
    quotes = await serveQuotes();
    dir = mkdtempSync(join(tmpdir(), 'cs-designer-pages-'));
  });

  after(async () => {
    await vscode.commands.executeCommand('workbench.action.closeAllEditors');
    await shop?.close();
    await quotes?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('New Task File on the Demo Shop list page: its items are the books, with the titles and prices the page shows', async () => {
    const created = await vscode.commands.executeCommand<vscode.Uri>(C.newTask, {
      folder: dir,
      name: 'shop',
      start: `${shop.url}/catalogue/page-2.html`,
      preview: false,
    });
    const text = readFileSync(created.fsPath, 'utf8');
    const { task, diagnostics } = parseTask(text, created.fsPath);
    assert.deepEqual(diagnostics, [], text);
    const list = extractPage(
      await page(`${shop.url}/catalogue/page-3.html`),
      urlFacts(`${shop.url}/catalogue/page-3.html`),
      task!.rules[0]!,
    );
    const books = Array.from({ length: DEMO_SITE.perPage }, (_, i) => book(2 * DEMO_SITE.perPage + i + 1));
    assert.deepEqual(
      list.items.map((i) => [i.data.title, i.data.price]),
      books.map((b) => [b.title, `£${b.price}`]),
      text,
    );
    const detailUrl = `${shop.url}/catalogue/book-7.html`;
    const detail = extractPage(
      await page(detailUrl),
      urlFacts(detailUrl),
      task!.rules.find((r) => r.name === 'detail')!,
    );
    assert.equal(detail.items.length, 1, text);
    assert.equal(detail.items[0]!.data.title, book(7).title);
    assert.equal(detail.items[0]!.data.price, `£${book(7).price}`);
    assert.equal(
      vscode.languages.getDiagnostics(created).filter((d) => d.severity === vscode.DiagnosticSeverity.Error).length,
      0,
    );
  });

  it('New Task File on the quotes site: its items are the quotes; the detail rule reads the author, not the site header', async () => {
    const created = await vscode.commands.executeCommand<vscode.Uri>(C.newTask, {
      folder: dir,
      name: 'quotes',
      start: `${quotes.url}/`,
      preview: false,
    });
    const text = readFileSync(created.fsPath, 'utf8');
    const { task, diagnostics } = parseTask(text, created.fsPath);
    assert.deepEqual(diagnostics, [], text);
    const list = extractPage(await page(`${quotes.url}/page/2/`), urlFacts(`${quotes.url}/page/2/`), task!.rules[0]!);
    assert.deepEqual(
      list.items.map((i) => [i.data.text, i.data.author]),
      quotesOn(2).map((q) => [q.text, q.author]),
      text,
    );
    const a = author(3);
    const detailUrl = `${quotes.url}/author/${a.slug}/`;
    const detail = extractPage(
      await page(detailUrl),
      urlFacts(detailUrl),
      task!.rules.find((r) => r.name === 'detail')!,
    );
    assert.equal(detail.items[0]?.data.title, a.name, text);
    assert.ok(
      Object.values(detail.items[0].data).every(
        (v) => typeof v === 'string' && v !== '' && !v.includes('Quotes to Scrape'),
      ),
      JSON.stringify(detail.items[0].data),
    );
  });

  it('the Preview lens of a rule opens a page it handles, says which, and its warnings go with the preview', async () => {
    const file = join(dir, 'lens.crawl.yaml');
    writeFileSync(
      file,
      `name: lens
start:
  - ${quotes.url}/
rules:
  - name: list
    follow:
      - { selector: "li.next a", to: list }
      - { selector: "div.quote span a", to: author }
    items:
      - type: quote
        scope: div.quote
        fields: { text: span.text }
  - name: author
    items:
      - type: author
        fields:
          name: h3.author-title
          born: span.author-born-dat
  - name: orphan
    items:
      - type: x
        fields: { x: h9 }
`,
    );
    const uri = vscode.Uri.file(file);
    await vscode.window.showTextDocument(await vscode.workspace.openTextDocument(uri));
    const lenses = await vscode.commands.executeCommand<vscode.CodeLens[]>('vscode.executeCodeLensProvider', uri);
    const lens = (rule: string) =>
      lenses.find((l) => l.command?.command === C.open && l.command.arguments?.[1] === rule)!.command!;
    const noMatch = () => vscode.languages.getDiagnostics(uri).filter((d) => /matches 0 elements/.test(d.message));

    await vscode.commands.executeCommand(lens('author').command, ...lens('author').arguments!);
    const s = await until('an author page', async () => {
      const x = await snap(uri);
      return x?.state.page &&
        !x.state.loading &&
        x.state.analysis?.rule.name === 'author' &&
        x.state.page.url.includes('/author/')
        ? x
        : null;
    });
    assert.equal(s.state.page!.url, `${quotes.url}/author/Jane-Austen/`);
    assert.equal(s.state.pageWhy, "a page of rule author from the start page's links");
    assert.equal(s.state.analysis!.items[0]!.rows[0]!.cells[0]!.value, 'Jane Austen');
    // The warning is about the author page, and names it; the list rule's selectors were checked on no author page.
    const warning = await until('the zero-match warning', () =>
      noMatch().find((d) => d.message.includes('span.author-born-dat')),
    );
    assert.match(
      warning.message,
      new RegExp(`matches 0 elements on ${quotes.url.replace(/\./g, '\\.')}/author/Jane-Austen/`),
    );
    assert.ok(
      !noMatch().some((d) => /li\.next a|div\.quote/.test(d.message)),
      noMatch()
        .map((d) => d.message)
        .join('\n'),
    );

    // The lens of the list rule goes back to the start URL, and says so.
    await vscode.commands.executeCommand(lens('list').command, ...lens('list').arguments!);
    const l = await until('the start page', async () => {
      const x = await snap(uri);
      return x?.state.page?.url === `${quotes.url}/` && !x.state.loading && x.state.analysis?.rule.name === 'list'
        ? x
        : null;
    });
    assert.equal(l.state.pageWhy, 'a start URL of the task, handled by rule list');

    // A run stored an item of Mark Twain's page with rule author: the lens takes the run's page first.
    const store = await openStore(`sqlite:${join(dir, '.crawl', 'lens.sqlite')}`);
    const twain = `${quotes.url}/author/Mark-Twain/`;
    await store.writeBatch(
      [],
      [
        {
          type: 'author',
          key: 'twain',
          json: '{"name":"Mark Twain"}',
          fields: ['name'],
          url: twain,
          rule: 'author',
          run: 'r1',
          fetchedAt: Date.now(),
        },
      ],
      'update',
    );
    await store.close();
    await vscode.commands.executeCommand(lens('author').command, ...lens('author').arguments!);
    const r = await until("the run's author page", async () => {
      const x = await snap(uri);
      return x?.state.page?.url === twain && !x.state.loading && x.state.analysis?.rule.name === 'author' ? x : null;
    });
    assert.equal(r.state.pageWhy, "a page of rule author from a run (the task's store)");
    await until('the warning on the run page', () =>
      noMatch().find((d) => d.message.includes(`span.author-born-dat' matches 0 elements on ${twain}`)),
    );
    await vscode.commands.executeCommand(lens('list').command, ...lens('list').arguments!);
    await until('the start page again', async () => (await snap(uri))?.state.page?.url === `${quotes.url}/`);

    // A rule no page is known for: applied to the page on show, said so, and not checked against it.
    await vscode.commands.executeCommand(lens('orphan').command, ...lens('orphan').arguments!);
    const o = await until('the orphan rule', async () => {
      const x = await snap(uri);
      return x?.state.analysis?.rule.name === 'orphan' ? x : null;
    });
    assert.match(o.state.pageWhy ?? '', /^no page of rule orphan found/);
    // An absence: the checker's time to run (600 ms), then no warning may be about `h9` on the start page.
    await new Promise((r) => setTimeout(r, 600));
    assert.ok(
      !noMatch().some((d) => d.message.includes("'h9'")),
      noMatch()
        .map((d) => d.message)
        .join('\n'),
    );
    assert.ok(
      noMatch().some((d) => d.message.includes('span.author-born-dat')),
      'the author page stays checked while the preview is open',
    );

    // Closing the preview takes its warnings away; the validator's own problems stay where they are.
    const tab = vscode.window.tabGroups.all.flatMap((g) => g.tabs).find((t) => t.label === 'Preview lens.crawl.yaml');
    assert.ok(
      tab,
      `the preview tab, among ${vscode.window.tabGroups.all
        .flatMap((g) => g.tabs)
        .map((t) => t.label)
        .join(', ')}`,
    );
    await vscode.window.tabGroups.close(tab);
    await until('the warnings gone', () => noMatch().length === 0);
    assert.equal(await snap(uri), null);
    // Nor do they come back when the file is checked afresh (as after a reload): the pages cached on disk, the
    // author page among them, are no longer what the checks run against. An unknown key shows the check ran.
    const doc = await vscode.workspace.openTextDocument(uri);
    const edit = new vscode.WorkspaceEdit();
    edit.insert(uri, doc.positionAt(doc.getText().length), 'bogusKey: 1\n');
    assert.ok(await vscode.workspace.applyEdit(edit));
    await until('the file checked again', () =>
      vscode.languages.getDiagnostics(uri).some((d) => /bogusKey/.test(d.message)),
    );
    assert.deepEqual(
      noMatch().map((d) => d.message),
      [],
    );
  });
});
