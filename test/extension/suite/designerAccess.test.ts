import * as assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as vscode from 'vscode';
import type { PanelSnapshot } from '../../../src/extension/designer/previewPanel';
import { freePort, serveHttp, type HttpServer } from '../../support/services';
import { startSocks5, type SocksServer } from '../../support/socks';
import { until } from '../support';

// The designer's preview of sitemaps, and of pages behind a login and a proxy (issue 17), in a real VS Code: a real
// site on 127.0.0.1 with a login form (session cookie, CSRF token), sitemaps only a logged-in session may read, a
// sitemap index and a robots.txt naming sitemaps, and a real SOCKS5 proxy that wants credentials. The credentials are
// in the extension's Secret Storage only; the preview fetches as a worker would and never shows them.

const C = {
  open: 'crawlStudio.designer.openPreview',
  state: 'crawlStudio.designer._state',
  message: 'crawlStudio.designer._message',
  secret: 'crawlStudio._setCrawlSecretForTest',
};
const USER = 'dora';
const PASSWORD = 'Login-Pw-31k';
const SOCKS_USER = 'sk';
const SOCKS_PASSWORD = 'Socks-Pw-62m';

interface Site extends HttpServer {
  /** What the site saw: logins, failed logins, the client port of each request. */
  readonly seen: { logins: number; failedLogins: number; ports: number[] };
}

function cookies(req: IncomingMessage): Map<string, string> {
  return new Map(
    (req.headers.cookie ?? '')
      .split(';')
      .map((p) => p.trim().split('=') as [string, string])
      .filter(([k]) => k),
  );
}

async function loginSite(): Promise<Site> {
  const csrf = new Map<string, string>();
  const auth = new Set<string>();
  const state = { logins: 0, failedLogins: 0, ports: [] as number[] };
  let base = '';
  const server = await serveHttp((req, res) => {
    void (async () => {
      state.ports.push(req.socket.remotePort!);
      const path = new URL(req.url ?? '/', 'http://x').pathname;
      const c = cookies(req);
      const html = (status: number, body: string, headers: Record<string, string> = {}) => {
        res.writeHead(status, { 'content-type': 'text/html', ...headers });
        res.end(`<!doctype html><body>${body}</body>`);
      };
      const xml = (body: string) => {
        res.writeHead(200, { 'content-type': 'application/xml' });
        res.end(`<?xml version="1.0"?>${body}`);
      };
      if (path === '/robots.txt') {
        res.writeHead(200, { 'content-type': 'text/plain' });
        return res.end(
          `User-agent: *\nAllow: /\nSitemap: ${base}/sitemap_index.xml\nSitemap: ${base}/sitemap-items.xml\n`,
        );
      }
      if (path === '/sitemap_index.xml') {
        return xml(
          `<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><sitemap><loc>${base}/sitemap-items.xml</loc></sitemap><sitemap><loc>http://elsewhere.test/sitemap.xml</loc></sitemap></sitemapindex>`,
        );
      }
      if (path === '/login' && req.method === 'GET') {
        const sid = randomBytes(6).toString('hex');
        csrf.set(sid, randomBytes(6).toString('hex'));
        return html(
          200,
          `<form method="post" action="/login"><input type="hidden" name="csrf" value="${csrf.get(sid)}"><input name="user"><input type="password" name="password"></form>`,
          { 'set-cookie': `sid=${sid}; Path=/` },
        );
      }
      if (path === '/login' && req.method === 'POST') {
        let body = '';
        for await (const chunk of req) body += chunk;
        const form = new URLSearchParams(body);
        const sid = c.get('sid');
        if (
          !sid ||
          csrf.get(sid) !== form.get('csrf') ||
          form.get('user') !== USER ||
          form.get('password') !== PASSWORD
        ) {
          state.failedLogins++;
          return html(403, 'bad login');
        }
        state.logins++;
        const token = randomBytes(6).toString('hex');
        auth.add(token);
        res.writeHead(302, { location: '/', 'set-cookie': `auth=${token}; Path=/` });
        return res.end();
      }
      if (!auth.has(c.get('auth') ?? '')) {
        res.writeHead(302, { location: '/login' });
        return res.end();
      }
      if (path === '/sitemap-items.xml') {
        return xml(
          `<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">${[1, 2].map((i) => `<url><loc>${base}/item/${i}</loc><lastmod>2026-01-0${i}</lastmod></url>`).join('')}<url><loc>${base}/about</loc></url><url><loc>http://elsewhere.test/item/3</loc></url></urlset>`,
        );
      }
      const m = /^\/item\/(\d+)$/.exec(path);
      if (m) return html(200, `<a class="logout" href="/logout">out</a><h1>Item ${m[1]}</h1>`);
      return html(200, '<a class="logout" href="/logout">out</a><p>home</p>');
    })();
  });
  base = server.url;
  return { ...server, seen: state };
}

describe('designer preview: sitemaps, logins and proxies (real site, SOCKS5 proxy, Secret Storage)', function () {
  this.timeout(90_000);
  let site: Site;
  let socks: SocksServer;
  let dir: string;

  before(async () => {
    await vscode.extensions.getExtension('crawl-studio.crawl-studio')!.activate();
    site = await loginSite();
    socks = await startSocks5({ user: SOCKS_USER, password: SOCKS_PASSWORD });
    dir = mkdtempSync(join(tmpdir(), 'cs-designer-access-'));
    for (const [name, value] of [
      ['CRAWL_STUDIO_DA_USER', USER],
      ['CRAWL_STUDIO_DA_PASSWORD', PASSWORD],
      ['CRAWL_STUDIO_DA_SOCKS_USER', SOCKS_USER],
      ['CRAWL_STUDIO_DA_SOCKS_PASSWORD', SOCKS_PASSWORD],
    ]) {
      await vscode.commands.executeCommand(C.secret, name, value);
    }
  });
  after(async () => {
    await vscode.commands.executeCommand('workbench.action.closeAllEditors');
    for (const name of [
      'CRAWL_STUDIO_DA_USER',
      'CRAWL_STUDIO_DA_PASSWORD',
      'CRAWL_STUDIO_DA_SOCKS_USER',
      'CRAWL_STUDIO_DA_SOCKS_PASSWORD',
    ])
      await vscode.commands.executeCommand(C.secret, name, '');
    await socks?.close();
    await site?.close();
  });

  const task = (name: string, proxyPort: number, extra = '') => `name: ${name}
start:
  - sitemap: ${site.url}/robots.txt
  - sitemap: ${site.url}/sitemap-items.xml
    since: 2026-01-02
request: { timeout: 5s }
login:
  url: ${site.url}/login
  form: { fields: { user: '\${CRAWL_STUDIO_DA_USER}', password: '\${CRAWL_STUDIO_DA_PASSWORD}' } }
  check: { selector: .logout }
proxy:
  urls: ['socks5://\${CRAWL_STUDIO_DA_SOCKS_USER}:\${CRAWL_STUDIO_DA_SOCKS_PASSWORD}@127.0.0.1:${proxyPort}']
${extra}rules:
  - name: home
  - name: item
    match: ["**/item/*"]
    items: [{ type: item, key: [title], fields: { title: h1 } }]
`;

  async function preview(
    name: string,
    text: string,
    url: string,
  ): Promise<{ uri: vscode.Uri; state: () => Promise<PanelSnapshot> }> {
    const file = join(dir, `${name}.crawl.yaml`);
    writeFileSync(file, text);
    const uri = vscode.Uri.file(file);
    await vscode.window.showTextDocument(await vscode.workspace.openTextDocument(uri));
    await vscode.commands.executeCommand(C.open, uri, undefined, url);
    const state = async () => (await vscode.commands.executeCommand<PanelSnapshot | null>(C.state, uri))!;
    return { uri, state };
  }

  it("shows a sitemap's entries with the rule each goes to (logged in, through the proxy), an index's sitemaps, a robots.txt's", async () => {
    const p = await preview('da-sitemaps', task('da-sitemaps', socks.port), `${site.url}/sitemap-items.xml`);
    const s = await until('the sitemap in the preview', async () => {
      const st = (await p.state()).state;
      return st.sitemap && !st.loading ? st : null;
    });
    assert.equal(s.pageError, null);
    assert.equal(s.sitemap!.format, 'urlset');
    assert.deepEqual(
      s.sitemap!.entries.map((e) => [e.url.replace(site.url, ''), e.rule ?? e.dropped]),
      [
        ['/item/1', 'since'],
        ['/item/2', 'item'],
        ['/about', 'no-rule'],
        ['http://elsewhere.test/item/3', 'offsite'],
      ],
      "routed with the task's own settings for this sitemap (since 2026-01-02), as a worker routes them",
    );
    assert.match(s.sitemap!.settings, /the task's sitemap entry/);
    assert.equal(site.seen.logins, 1, 'the preview logged in once, with the form and its CSRF token');
    assert.match(
      s.access ?? '',
      new RegExp(`logged in at ${site.url}/login, through socks5://127\\.0\\.0\\.1:${socks.port}`),
    );
    assert.ok(
      site.seen.ports.length > 0 && site.seen.ports.every((port) => socks.upstreamPorts.has(port)),
      'every request went through the SOCKS proxy',
    );

    // The task edited: the entries are routed again, without fetching the sitemap again.
    const served = site.seen.ports.length;
    const doc = await vscode.workspace.openTextDocument(p.uri);
    const edit = new vscode.WorkspaceEdit();
    const at = doc.getText().indexOf('  - name: home\n');
    edit.insert(p.uri, doc.positionAt(at + '  - name: home\n'.length), '    match: ["**/about"]\n');
    assert.ok(await vscode.workspace.applyEdit(edit));
    await until(
      '/about routed to home',
      async () => (await p.state()).state.sitemap?.entries.find((e) => e.url.endsWith('/about'))?.rule === 'home',
    );
    assert.equal(site.seen.ports.length, served, 'not fetched again');

    // The index: its sitemaps, one read next, one off the task's hosts.
    await vscode.commands.executeCommand(C.message, p.uri, { type: 'openPage', url: `${site.url}/sitemap_index.xml` });
    const index = await until('the index', async () => {
      const st = (await p.state()).state;
      return st.sitemap?.format === 'sitemapindex' && !st.loading ? st.sitemap : null;
    });
    assert.deepEqual(
      index.entries.map((e) => [e.kind, e.url.replace(site.url, ''), e.dropped]),
      [
        ['sitemap', '/sitemap-items.xml', null],
        ['sitemap', 'http://elsewhere.test/sitemap.xml', 'offsite'],
      ],
    );
    // robots.txt: the sitemaps its Sitemap: lines name.
    await vscode.commands.executeCommand(C.message, p.uri, { type: 'openPage', url: `${site.url}/robots.txt` });
    const robots = await until('robots.txt', async () => {
      const st = (await p.state()).state;
      return st.sitemap?.format === 'robots' && !st.loading ? st.sitemap : null;
    });
    assert.deepEqual(
      robots.entries.map((e) => e.url.replace(site.url, '')),
      ['/sitemap_index.xml', '/sitemap-items.xml'],
    );
    assert.ok(
      !JSON.stringify(await p.state()).includes(PASSWORD) && !JSON.stringify(await p.state()).includes(SOCKS_PASSWORD),
      'no credential in what the preview holds',
    );
  });

  it('previews a page behind the login through the proxy, and says what failed: the login, the proxy', async () => {
    const p = await preview('da-page', task('da-page', socks.port), `${site.url}/item/2`);
    const s = await until('the page and its items', async () => {
      const st = (await p.state()).state;
      return (st.page && !st.loading && st.analysis?.items.length) || st.pageError ? st : null;
    });
    assert.equal(s.pageError, null);
    assert.equal(s.page!.finalUrl, `${site.url}/item/2`, 'not sent to the login page');
    assert.deepEqual(
      s.analysis!.items[0]!.rows.map((r) => r.cells[0]!.value),
      ['Item 2'],
    );

    // A wrong password (as Set Crawl Secret would store it): the login fails, with its status, and says so.
    await vscode.commands.executeCommand(C.secret, 'CRAWL_STUDIO_DA_PASSWORD', 'not-the-password');
    const failed = site.seen.failedLogins;
    await vscode.commands.executeCommand(C.message, p.uri, { type: 'refetch' });
    const bad = await until('the login failure', async () => {
      const st = (await p.state()).state;
      return st.pageError && !st.loading ? st.pageError : null;
    });
    assert.match(bad, /^Could not log in, so .*\/item\/2 was not fetched: login to .*\/login failed: HTTP 403/);
    assert.equal(site.seen.failedLogins, failed + 1);
    assert.ok(!bad.includes('not-the-password'));
    await vscode.commands.executeCommand(C.secret, 'CRAWL_STUDIO_DA_PASSWORD', PASSWORD);

    // A proxy that refuses connections: named, without its credentials.
    const dead = await freePort();
    const q = await preview('da-proxy', task('da-proxy', dead), `${site.url}/item/1`);
    const refused = await until('the proxy failure', async () => {
      const st = (await q.state()).state;
      return st.pageError && !st.loading ? st.pageError : null;
    });
    assert.match(
      refused,
      new RegExp(`^The proxy failed, so .*/item/1 was not fetched: proxy socks5://127\\.0\\.0\\.1:${dead}: `),
    );
    assert.ok(!refused.includes(SOCKS_PASSWORD) && !refused.includes(SOCKS_USER + ':'), refused);
  });
});
