import assert from 'node:assert/strict';
import { decodeBuffer } from 'encoding-sniffer';
import { decodeBody, decodeChecked } from '../../src/worker/charset';
import { chance, int, pick, rng, type Rng } from '../fuzz/rng';

// decodeBody decides the encoding from a BOM or the header's charset without sniffing, and decodes UTF-8 with Node's
// own decoder (a page's decode is on the worker's main thread, issue 36). It must read every body as encoding-sniffer's
// decodeBuffer did before: the same encoding found in the same WHATWG order, the same U+FFFD for invalid bytes, no BOM.

const reference = (bytes: Buffer, contentType: string | null) =>
  decodeBuffer(bytes, {
    transportLayerEncodingLabel: /;\s*charset\s*=\s*["']?([^;"'\s]+)/i.exec(contentType ?? '')?.[1],
    defaultEncoding: 'utf-8',
  });

const CONTENT_TYPES = [
  null,
  'text/html',
  'text/html; charset=utf-8',
  'text/html; charset=UTF-8',
  'text/html;charset="utf8"',
  'text/html; charset=iso-8859-1',
  'text/html; charset=windows-1251',
  'text/html; charset=shift_jis',
  'text/html; charset=utf-16le',
  'text/html; charset=x-user-defined',
  'text/html; charset=no-such-charset',
  'application/json; charset=utf-8',
];

const PREFIXES = [
  [],
  [0xef, 0xbb, 0xbf],
  [0xfe, 0xff],
  [0xff, 0xfe],
  [0xef, 0xbb],
  [0x3c, 0x00, 0x3f, 0x00],
  ...['<meta charset="iso-8859-2">', '<meta charset=utf-16>', '<?xml version="1.0" encoding="euc-jp"?>'].map((s) => [
    ...Buffer.from(s, 'latin1'),
  ]),
  [...Buffer.from('<meta http-equiv="Content-Type" content="text/html; charset=koi8-r">', 'latin1')],
];

/** Bytes that are often not valid UTF-8: ASCII, lone continuation bytes, lead bytes, 4-byte leads, and text. */
function body(r: Rng): Buffer {
  const out: number[] = [...pick(r, PREFIXES)];
  const n = int(r, 0, 40);
  for (let i = 0; i < n; i++) {
    if (chance(r, 0.15)) out.push(...Buffer.from(pick(r, ['Crème', '€', 'Ω', '😀', 'abc', '<p>'])));
    else out.push(pick(r, [int(r, 0, 0x7f), int(r, 0x80, 0xbf), int(r, 0xc0, 0xf7), int(r, 0xf8, 0xff)]));
  }
  return Buffer.from(out);
}

/** The text, or the error: a charset iconv-lite lacks (x-user-defined) throws in both, as before. */
function outcome(decode: () => string): string {
  try {
    return decode();
  } catch (err) {
    return `throws: ${(err as Error).message}`;
  }
}

describe('charset: decodeBody', () => {
  it('reads every body as encoding-sniffer decodeBuffer does (20,000 generated bodies and headers)', () => {
    const r = rng(36);
    for (let i = 0; i < 20_000; i++) {
      const bytes = body(r);
      const type = pick(r, CONTENT_TYPES);
      const want = outcome(() => reference(bytes, type));
      assert.equal(
        outcome(() => decodeBody(bytes, type)),
        want,
        `case ${i}: ${type} ${bytes.toString('hex')}`,
      );
      assert.equal(
        outcome(() => decodeChecked(bytes, type).text),
        want,
        `case ${i}`,
      );
    }
  });

  it('strips a BOM, lets a BOM win over the header, and falls back to the meta or UTF-8', () => {
    const bom = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('Crème')]);
    assert.equal(decodeBody(bom, 'text/html; charset=iso-8859-1'), 'Crème');
    const utf16 = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('Crème', 'utf16le')]);
    assert.equal(decodeBody(utf16, 'text/html; charset=utf-8'), 'Crème');
    const meta = Buffer.from('<meta charset="iso-8859-1">Cr\xe8me', 'latin1');
    assert.equal(decodeBody(meta, 'text/html'), '<meta charset="iso-8859-1">Crème');
    assert.equal(decodeBody(meta, 'text/html; charset=bogus'), '<meta charset="iso-8859-1">Crème');
    assert.equal(decodeBody(Buffer.from('Crème'), null), 'Crème');
    assert.equal(decodeBody(Buffer.from([0x61, 0xe2, 0x82, 0x62]), 'text/html; charset=utf-8'), 'a\uFFFDb');
  });
});
