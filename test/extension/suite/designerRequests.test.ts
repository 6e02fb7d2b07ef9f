import * as assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as vscode from 'vscode';
import type { PanelSnapshot } from '../../../src/extension/designer/previewPanel';
import { serveHttp, type HttpServer } from '../../support/services';
import { EXTENSION_ID, until } from '../support';

// The preview of an API in a real VS Code: a JSON response shown as a JSON view in the sandboxed frame (the
// webview acknowledges the rows and the frame it shows), items and links extracted by JSONPath, the next page
// of a {page} series listed and opened, a JSONPath under the cursor highlighted in the JSON view, and a start
// entry that POSTs a JSON body with a variable and a rule header sent as a worker sends it.

const C = {
  open: 'crawlStudio.designer.openPreview',
  state: 'crawlStudio.designer._state',
  message: 'crawlStudio.designer._message',
  pick: 'crawlStudio.designer._pick',
};
const KEY = 'ext-key-5c1e';

const snap = (uri: vscode.Uri) => vscode.commands.executeCommand<PanelSnapshot | null>(C.state, uri);

describe('crawl designer: JSON responses and requests', function () {
  this.timeout(120_000);
  let api: HttpServer;
  const received: string[] = [];
  let dir: string;
  let uri: vscode.Uri;
  let editor: vscode.TextEditor;

  before(async () => {
    await vscode.extensions.getExtension(EXTENSION_ID)!.activate();
    process.env.CRAWL_STUDIO_EXT_KEY = KEY;
    api = await serveHttp((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        received.push(`${req.method} ${req.url} ${req.headers['x-key'] ?? '-'} ${body}`);
        const u = new URL(req.url ?? '/', 'http://x');
        res.setHeader('content-type', 'application/json');
        if (req.headers['x-key'] !== KEY) return res.writeHead(401).end('{"error":"no key"}');
        if (u.pathname === '/items') {
          const page = Number(u.searchParams.get('page'));
          return res.end(
            JSON.stringify({
              page,
              items:
                page <= 2
                  ? [1, 2, 3].map((i) => ({
                      id: `${page}-${i}`,
                      name: `Item ${page}.${i}`,
                      href: `/items/${page}-${i}`,
                    }))
                  : [],
            }),
          );
        }
        if (u.pathname === '/search' && req.method === 'POST') {
          const q = (JSON.parse(body) as { q: string }).q;
          return res.end(JSON.stringify({ items: [{ id: 's1', name: `Found ${q}`, href: '/items/s1' }] }));
        }
        res.writeHead(404).end('{}');
      });
    });
    dir = mkdtempSync(join(tmpdir(), 'cs-designer-json-'));
    const file = join(dir, 'api.crawl.yaml');
    writeFileSync(
      file,
      `name: designer-json
start:
  - url: ${api.url}/items?page={page}
  - url: ${api.url}/search
    json: { q: shoes, key: '\${CRAWL_STUDIO_EXT_KEY}' }
rules:
  - name: items
    request: { headers: { x-key: '\${CRAWL_STUDIO_EXT_KEY}' } }
    items:
      - type: item
        scope: $.items
        key: [id]
        fields:
          id: $.id
          name: $.name
    follow:
      - { selector: '$.items[*].href', to: items }
`,
    );
    uri = vscode.Uri.file(file);
    editor = await vscode.window.showTextDocument(await vscode.workspace.openTextDocument(uri));
  });

  after(async () => {
    delete process.env.CRAWL_STUDIO_EXT_KEY;
    await vscode.commands.executeCommand('workbench.action.closeAllEditors');
    await api?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('shows the first page of the series as JSON, its items and links, and the next page to open', async () => {
    await vscode.commands.executeCommand(C.open, uri);
    let seen: unknown = null;
    const s = await until('the JSON page analysed', async () => {
      const x = await snap(uri);
      seen = {
        page: x?.state.page,
        error: x?.state.pageError,
        loading: x?.state.loading,
        choices: x?.state.choices,
        analysis: x?.state.analysis?.items,
        received,
      };
      return x?.state.page?.json && x.state.analysis?.items.length ? x : null;
    }).catch((err: Error) => {
      throw new Error(`${err.message}: ${JSON.stringify(seen)}`);
    });
    assert.equal(s.state.page!.url, `${api.url}/items?page=1`);
    assert.ok(received.includes(`GET /items?page=1 ${KEY} `), `sent with the rule's header: ${received.join('\n')}`);
    const table = s.state.analysis!.items[0]!;
    assert.deepEqual(table.columns, ['id', 'name']);
    assert.deepEqual(
      table.rows.map((r) => r.cells.map((c) => c.value)),
      [
        ['1-1', 'Item 1.1'],
        ['1-2', 'Item 1.2'],
        ['1-3', 'Item 1.3'],
      ],
    );
    const links = s.state.analysis!.links;
    assert.equal(links[0]!.keptTotal, 3);
    assert.equal(links[0]!.kept[0]!.url, `${api.url}/items/1-1`);
    const next = links.find((l) => l.index === -1)!;
    assert.equal(next.kept[0]!.url, `${api.url}/items?page=2`, 'the next page of the series');
    assert.ok(next.kept[0]!.key, 'opened as a page of the series');
    // The webview shows the rows and the JSON view in its frame.
    await until(
      'the webview to render',
      async () => {
        const x = await snap(uri);
        return x?.rendered && x.rendered.rows === 3 && x.rendered.frame === x.frameKey && x.frameKey ? x : null;
      },
      60_000,
    );

    // The next page, opened from the link: still a page of the series, which goes on to page 3.
    assert.equal(
      await vscode.commands.executeCommand<boolean>(C.message, uri, {
        type: 'openPage',
        url: next.kept[0]!.url,
        key: next.kept[0]!.key,
      }),
      true,
    );
    const p2 = await until('page 2', async () => {
      const x = await snap(uri);
      return x?.state.page?.url === `${api.url}/items?page=2` &&
        x.state.analysis?.items[0]?.rows[0]?.cells[0]?.value === '2-1'
        ? x
        : null;
    });
    assert.equal(p2.state.analysis!.links.find((l) => l.index === -1)!.kept[0]!.url, `${api.url}/items?page=3`);
  });

  it('highlights what the JSONPath under the cursor matches in the JSON view, and picks a value by path', async () => {
    const at = editor.document.getText().indexOf('name: $.name') + 8;
    editor.selection = new vscode.Selection(editor.document.positionAt(at), editor.document.positionAt(at));
    const s = await until('the JSONPath highlight', async () => {
      const x = await snap(uri);
      const h = x?.state.analysis?.highlight;
      return x && h?.selector === '$.name' && x.rendered?.seq === x.seq && x.rendered.highlighted === 3 ? x : null;
    });
    assert.deepEqual(s.state.analysis!.highlight!.scopes, { matched: 3, total: 3 });
    assert.equal(s.state.analysis!.highlight!.count, 3);
    // A click on a value in the JSON view (here on page 2's second item's name): its path, relative to the item.
    const picked = await vscode.commands.executeCommand<{
      suggestion: { selector: string; kind: string; element: string };
    }>(C.pick, uri, `[data-cs-path="$['items'][1]['name']"]`);
    assert.equal(picked.suggestion.element, '$.items[1].name');
    assert.equal(picked.suggestion.selector, '$.name');
    assert.equal(picked.suggestion.kind, 'scoped');
  });

  it("sends a start entry's POST with its JSON body, the variable filled in, and shows what it returns", async () => {
    const choice = (await snap(uri))!.state.choices.find((c) => c.label.includes('POST'))!;
    assert.ok(choice?.key, `the POST start entry is listed: ${JSON.stringify((await snap(uri))!.state.choices)}`);
    assert.equal(
      await vscode.commands.executeCommand<boolean>(C.message, uri, {
        type: 'openPage',
        url: choice.url,
        key: choice.key,
      }),
      true,
    );
    const s = await until('the search results', async () => {
      const x = await snap(uri);
      return x?.state.page?.method === 'POST' && x.state.analysis?.items[0]?.rows[0]?.cells[1]?.value === 'Found shoes'
        ? x
        : null;
    });
    assert.equal(
      s.state.page!.body,
      '{"q":"shoes","key":"${CRAWL_STUDIO_EXT_KEY}"}',
      'shown with the variable by name',
    );
    assert.ok(received.includes(`POST /search ${KEY} {"q":"shoes","key":"${KEY}"}`), received.join('\n'));
    assert.equal(s.state.analysis!.items[0]!.rows[0]!.cells[1]!.value, 'Found shoes');
  });
});
