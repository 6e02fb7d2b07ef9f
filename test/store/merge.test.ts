import { strict as assert } from 'node:assert';
import { backoffDelay } from '../../src/store/backoff';
import { csvCell, csvRow, parseCsv } from '../../src/store/csv';
import { decodeEntry, mergeBatch, type DecodedEntry } from '../../src/store/merge';
import { resolveStoreUrl } from '../../src/store/open';
import { itemTableName, schemaForTask } from '../../src/store/tables';
import type { PageRecord } from '../../src/store/types';
import { page, product } from './helpers';

// The pure parts of the pipeline: no Redis, no database.

function entry(id: string, p: PageRecord | string): DecodedEntry {
  return decodeEntry(id, ['p', typeof p === 'string' ? p : JSON.stringify(p)]);
}

describe('store: merge', () => {
  it('keeps one row per (type, key): first wins under ignore, newest fetch under update', () => {
    const a = page('t', 'https://x/1', [product('k1', { name: 'old' }), product('k2')], { fetchedAt: 1000 });
    const b = page(
      't',
      'https://x/2',
      [product('k1', { name: 'new' }), { type: 'other', key: 'k1', data: { v: '1' } }],
      { fetchedAt: 2000 },
    );
    const ignore = mergeBatch([entry('1-0', a), entry('2-0', b)], 'ignore');
    assert.equal(ignore.received, 4);
    assert.equal(ignore.duplicates, 1);
    assert.equal(ignore.items.length, 3, 'same key in another type is another item');
    assert.equal(JSON.parse(ignore.items.find((i) => i.key === 'k1' && i.type === 'product')!.json).name, 'old');
    const update = mergeBatch([entry('1-0', a), entry('2-0', b)], 'update');
    assert.equal(JSON.parse(update.items.find((i) => i.key === 'k1' && i.type === 'product')!.json).name, 'new');
    assert.equal(update.items.find((i) => i.key === 'k1' && i.type === 'product')!.url, 'https://x/2');
  });

  it('collapses a page fetched twice in a run to its latest fetch', () => {
    const a = page('t', 'https://x/1', [], { fetchedAt: 2000, status: 500 });
    const b = page('t', 'https://x/1', [], { fetchedAt: 3000, status: 200 });
    const m = mergeBatch([entry('1-0', b), entry('2-0', a)], 'ignore');
    assert.equal(m.pages.length, 1);
    assert.equal(m.pages[0]!.status, 200);
  });

  it('turns malformed items and entries into error rows with deterministic ids, and keeps the rest', () => {
    const bad = page(
      't',
      'https://x/bad',
      [
        product('ok'),
        { type: 'product', key: '', data: { a: '1' } },
        { type: 'product', data: { a: '1' } } as never,
        { type: 'product', key: 'huge', data: { a: 'x'.repeat(2000) } },
        { type: 'product', key: 'k'.repeat(3000), data: { a: '1' } },
        { type: '', key: 'x', data: {} },
        { type: 'product', key: 'nodata', data: ['x'] } as never,
      ],
      { problems: [{ type: 'product', index: 3, message: "required field 'name' empty" }] },
    );
    const entries = [
      entry('5-0', bad),
      entry('6-0', '{not json'),
      entry('7-0', JSON.stringify({ url: 'https://x/norun' })),
    ];
    const m = mergeBatch(entries, 'ignore', { maxItemBytes: 1000, maxKeyBytes: 2048 });
    assert.deepEqual(
      m.items.map((i) => i.key),
      ['ok'],
    );
    assert.equal(m.pages.length, 1);
    assert.equal(m.received, 7);
    const messages = m.errors.map((e) => `${e.id} ${e.kind} ${e.url ?? '-'} ${e.message}`);
    assert.equal(m.errors.length, 9, messages.join('\n'));
    assert.match(messages[0]!, /^5-0\/0 extract https:\/\/x\/bad required field 'name' empty$/);
    assert.match(messages[1]!, /^5-0\/1 invalid https:\/\/x\/bad item 1: missing or empty 'key'$/);
    assert.match(messages[2]!, /item 2: missing or empty 'key'/);
    assert.match(messages[3]!, /item 3: item is \d+ bytes of JSON, more than the 1000 allowed/);
    assert.match(messages[4]!, /item 4: key is 3000 bytes, more than 2048/);
    assert.match(messages[5]!, /item 5: missing or empty 'type'/);
    assert.match(messages[6]!, /item 6: 'data' is not an object/);
    assert.match(messages[7]!, /^6-0\/0 invalid - stream entry is not valid JSON/);
    assert.match(
      messages[8]!,
      /^7-0\/0 invalid https:\/\/x\/norun stream entry 7-0 is not a page record: missing 'run'/,
    );
    // A replay of the same entries produces the same ids: the stores' unique error_id makes it a no-op.
    assert.deepEqual(
      mergeBatch(entries, 'ignore', { maxItemBytes: 1000, maxKeyBytes: 2048 }).errors.map((e) => e.id),
      m.errors.map((e) => e.id),
    );
  });

  it('replaces characters no store can hold (NUL, lone surrogates) instead of dropping the item', () => {
    const m = mergeBatch(
      [entry('1-0', page('t', 'https://x/1', [product('k\u0000', { name: 'a\u0000b\ud800c', tags: ['\udc00'] })]))],
      'ignore',
    );
    assert.equal(m.items.length, 1);
    assert.equal(m.items[0]!.key, 'k\ufffd');
    const data = JSON.parse(m.items[0]!.json);
    assert.equal(data.name, 'a\ufffdb\ufffdc');
    assert.deepEqual(data.tags, ['\ufffd']);
    // Proper pairs are left alone.
    const ok = mergeBatch(
      [entry('1-0', page('t', 'https://x/1', [product('k', { name: 'emoji \ud83d\ude00' })]))],
      'ignore',
    );
    assert.equal(JSON.parse(ok.items[0]!.json).name, 'emoji \ud83d\ude00');
  });
});

describe('store: csv', () => {
  it('quotes per RFC 4180, keeps null apart from the empty string, writes lists as JSON', () => {
    assert.equal(
      csvRow(['a', 'b,c', 'say "hi"', 'line\nbreak', null, '', ['x', 'y'], ' pad']),
      'a,"b,c","say ""hi""","line\nbreak",,"","[""x"",""y""]"," pad"\r\n',
    );
    assert.equal(csvCell('plain ünïcödé ✓'), 'plain ünïcödé ✓');
  });

  it('parses what it writes', () => {
    const rows = [
      ['a', 'b,c', 'say "hi"', 'line\r\nbreak', null, ''],
      [null, null, null, null, null, null],
      ['日本語', '😀', '=1+1', '"', ',', '\n'],
    ];
    // Raw: exactly what it was given ('=1+1' included; by default such a cell is neutralised, see export.test.ts).
    const text = rows.map((r) => csvRow(r, { raw: true })).join('');
    assert.deepEqual(parseCsv(text), rows);
    assert.deepEqual(parseCsv('a,b\nc,\n'), [
      ['a', 'b'],
      ['c', null],
    ]);
    assert.throws(() => parseCsv('"open'), /never closed/);
  });
});

describe('store: names, URLs, backoff', () => {
  it('derives distinct table names for types that differ only in case', () => {
    assert.equal(itemTableName('product'), 'items_product');
    assert.notEqual(itemTableName('Product'), itemTableName('product'));
    assert.match(itemTableName('Product'), /^items_product_[0-9a-f]{8}$/);
    assert.ok(itemTableName('x'.repeat(64)).length <= 63);
    assert.notEqual(schemaForTask('a-b'), schemaForTask('a_b'));
    assert.equal(schemaForTask('shop'), 'crawl_shop');
  });

  it('parses store URLs and explains the ones it cannot use', () => {
    assert.deepEqual(resolveStoreUrl('sqlite:/tmp/x.sqlite'), { kind: 'sqlite', path: '/tmp/x.sqlite' });
    assert.deepEqual(resolveStoreUrl('sqlite:rel/x.db', { cwd: '/w' }), { kind: 'sqlite', path: '/w/rel/x.db' });
    assert.deepEqual(resolveStoreUrl('/w/.crawl/shop.sqlite'), { kind: 'sqlite', path: '/w/.crawl/shop.sqlite' });
    assert.deepEqual(resolveStoreUrl('postgres://u:pw@h:5432/db?schema=mine', { task: 'shop' }), {
      kind: 'postgres',
      url: 'postgres://u:pw@h:5432/db',
      schema: 'mine',
    });
    assert.equal((resolveStoreUrl('postgresql://u@h/db', { task: 'shop' }) as { schema: string }).schema, 'crawl_shop');
    assert.throws(
      () => resolveStoreUrl('mysql://u:secret@h/db'),
      (err: Error) =>
        /unsupported store URL "mysql:\/\/u:\*\*\*@h\/db"/.test(err.message) &&
        !err.message.includes('secret') &&
        /sqlite:<path>/.test(err.message),
    );
    assert.throws(() => resolveStoreUrl('sqlite:'), /names no file/);
  });

  it('backs off exponentially within bounds', () => {
    const max = (n: number) => backoffDelay(n, { initialMs: 100, maxMs: 1000 }, () => 1);
    const min = (n: number) => backoffDelay(n, { initialMs: 100, maxMs: 1000 }, () => 0);
    assert.deepEqual([1, 2, 3, 4, 5, 50].map(max), [100, 200, 400, 800, 1000, 1000]);
    assert.deepEqual([1, 2, 5].map(min), [50, 100, 500]);
  });
});
