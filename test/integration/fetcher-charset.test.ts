import assert from 'node:assert/strict';
import { fetchPage, type FetchOptions } from '../../src/worker/fetcher';
import { startRedis, type RedisServer, serveHttp, type HttpServer } from '../support/services';
import { bufferedPages, session, writeTask } from '../support/crawl';

// Pages in other encodings than UTF-8, decoded once in the fetch path (workers and the designer's preview both
// use fetchPage) in the WHATWG order: BOM, then the Content-Type charset, then <meta> in the first 1024 bytes.

const TEXT = 'caf\u00e9 \u2013 na\u00efve \u201cquoted\u201d \u20ac';
const JA = '\u65e5\u672c\u8a9e\u306e\u30da\u30fc\u30b8';

// windows-1252 bytes for TEXT, by hand so the test does not depend on the decoder under test.
const CP1252: Record<string, number> = {
  '\u00e9': 0xe9,
  '\u2013': 0x96,
  '\u00ef': 0xef,
  '\u201c': 0x93,
  '\u201d': 0x94,
  '\u20ac': 0x80,
};
function cp1252(s: string): Buffer {
  return Buffer.from([...s].map((c) => CP1252[c] ?? (c.charCodeAt(0) < 0x80 ? c.charCodeAt(0) : 0x3f)));
}
// Shift_JIS bytes for JA (日本語のページ).
const SJIS_JA = Buffer.from('93fa967b8cea82cc8379815b8357', 'hex');

function html(head: string, body: string): string {
  return `<!doctype html><html><head>${head}<title>t</title></head><body><p class="t">${body}</p></body></html>`;
}
const UTF16_PAGE = html('', TEXT);

describe('fetcher: page encodings (BOM, header charset, meta prescan)', function () {
  this.timeout(60_000);
  let web: HttpServer;
  let base = '';
  before(async () => {
    web = await serveHttp((req, res) => {
      const type = (t: string) => ({ 'content-type': t });
      switch (req.url) {
        case '/meta-charset':
          return res.writeHead(200, type('text/html')).end(cp1252(html('<meta charset="windows-1252">', TEXT)));
        case '/meta-http-equiv':
          return res
            .writeHead(200, type('text/html'))
            .end(cp1252(html('<meta http-equiv="Content-Type" content="text/html; charset=iso-8859-1">', TEXT)));
        case '/header-1252':
          return res.writeHead(200, type('text/html; charset=windows-1252')).end(cp1252(html('', TEXT)));
        case '/sjis':
          return res
            .writeHead(200, type('text/html'))
            .end(
              Buffer.concat([
                Buffer.from('<html><head><meta charset="Shift_JIS"></head><body><p class="t">'),
                SJIS_JA,
                Buffer.from('</p></body></html>'),
              ]),
            );
        case '/utf16le-bom':
        case '/':
          return res
            .writeHead(200, type('text/html'))
            .end(Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(UTF16_PAGE, 'utf16le')]));
        case '/header-beats-meta':
          return res
            .writeHead(200, type('text/html; charset=windows-1252'))
            .end(cp1252(html('<meta charset="utf-8">', TEXT)));
        case '/bom-beats-header':
          return res
            .writeHead(200, type('text/html; charset=windows-1252'))
            .end(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(html('', TEXT), 'utf8')]));
        case '/no-hint':
          return res.writeHead(200, type('text/html')).end(Buffer.from(html('', TEXT), 'utf8'));
        case '/robots.txt':
          return res.writeHead(404).end();
        default:
          return res.writeHead(404).end('no');
      }
    });
    base = web.url;
  });
  after(async () => {
    await web.close();
  });

  const opts: FetchOptions = {
    timeoutMs: 5000,
    maxBytes: 1 << 20,
    maxRedirects: 3,
    headers: {},
    userAgent: 'cs-test',
    privateAllowed: null,
  };
  const body = async (path: string) => (await fetchPage(`${base}${path}`, opts)).body;

  it('decodes windows-1252 named by <meta charset> when the header has no charset', async () => {
    assert.equal(await body('/meta-charset'), html('<meta charset="windows-1252">', TEXT));
  });

  it('decodes iso-8859-1 named by <meta http-equiv> as windows-1252 (curly quotes, dash and euro, not C1 controls)', async () => {
    const text = await body('/meta-http-equiv');
    assert.ok(text.includes(TEXT), text);
    assert.doesNotMatch(text, /[\u0080-\u009f]/);
  });

  it('decodes windows-1252 named by the Content-Type header', async () => {
    assert.equal(await body('/header-1252'), html('', TEXT));
  });

  it('decodes Shift_JIS named by <meta charset>', async () => {
    assert.ok((await body('/sjis')).includes(`<p class="t">${JA}</p>`));
  });

  it('decodes UTF-16LE with a BOM and no charset in the header (BOM stripped)', async () => {
    const page = await fetchPage(`${base}/utf16le-bom`, opts);
    assert.equal(page.body, UTF16_PAGE);
    assert.equal(page.bytes, 2 + Buffer.byteLength(UTF16_PAGE, 'utf16le'), 'the size is still counted in bytes');
  });

  it('lets the header charset beat <meta>', async () => {
    assert.equal(await body('/header-beats-meta'), html('<meta charset="utf-8">', TEXT));
  });

  it('lets a BOM beat the header charset', async () => {
    assert.equal(await body('/bom-beats-header'), html('', TEXT));
  });

  it('defaults to UTF-8 without any hint', async () => {
    assert.equal(await body('/no-hint'), html('', TEXT));
  });

  describe('in a crawl', () => {
    let redis: RedisServer;
    before(async () => {
      redis = await startRedis();
    });
    after(async () => {
      await redis?.stop();
    });

    it('extracts the items of a UTF-16LE page with a BOM', async () => {
      const task = await writeTask(`name: charset
start: [${base}/]
request: { timeout: 5s, retries: { attempts: 1 } }
rules:
  - name: page
    match: ["${base}/"]
    items:
      - type: text
        fields:
          text: p.t
`);
      const s = session(task, redis.url, { workers: 1 });
      const result = await s.run();
      await s.close();
      assert.equal(result.status.stats!.failed, 0);
      const pages = await bufferedPages(redis.url, 'charset');
      const items = pages.flatMap((p) => p.items);
      assert.equal(items.length, 1, JSON.stringify(pages));
      assert.equal(items[0]!.data.text, TEXT);
    });
  });
});
