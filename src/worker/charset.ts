import { decodeBuffer } from 'encoding-sniffer';
import { ResultType, Sniffer } from 'encoding-sniffer/sniffer';

// A response body's text, and a word when its charset is likely wrong: the Content-Type header's charset wins over
// the page's `<meta charset>` (WHATWG), and a server that labels UTF-8 pages iso-8859-1 turns every "Crème" into
// "CrÃ¨me" without an error anywhere. Shared by the workers and the designer's preview (both decode through
// fetcher.ts).

/** The header's and the page's encodings, when they disagree and the header's reads as mojibake. */
export interface CharsetConflict {
  /** The encoding the Content-Type header names (Encoding Standard names: iso-8859-1 is windows-1252). */
  readonly header: string;
  /** The encoding the page's `<meta charset>` (or `<?xml encoding?>`) names. */
  readonly meta: string;
}

/** The sniffer reads this many bytes for a meta, as a browser does. */
const SNIFF_BYTES = 1024;

/**
 * The body's text, decoded once here so the workers and the designer's preview agree. The encoding is found in
 * the WHATWG order (encoding-sniffer, the sniffer cheerio uses): a BOM, then the Content-Type header's charset,
 * then a `<meta charset>` / `<meta http-equiv="Content-Type">` or `<?xml encoding=...?>` in the first 1024 bytes.
 * Labels map as the Encoding Standard says (iso-8859-1, latin1 and us-ascii mean windows-1252). Without any hint
 * the default is UTF-8, not the spec's windows-1252: what a crawler of today's sites meets. Invalid bytes become
 * U+FFFD rather than failing, so a broken page still parses. A BOM is not part of the text.
 *
 * The same text as encoding-sniffer's `decodeBuffer` with those options (test/unit/charset.test.ts holds it to
 * that), at a fraction of its cost on the page most crawls fetch, UTF-8 named by its header: every page is decoded
 * on the worker's main thread, and `decodeBuffer` scans the first 1024 bytes for a meta even when the header's
 * charset decides, then decodes UTF-8 through iconv-lite's JavaScript decoder, where Node's own is native.
 */
export function decodeBody(bytes: Buffer, contentType: string | null): string {
  const encoding = encodingOf(bytes, charsetLabel(contentType));
  if (encoding !== 'UTF-8') return decodeBuffer(bytes, { userEncoding: encoding });
  const bom = bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? 3 : 0;
  return bytes.toString('utf8', bom);
}

/**
 * The encoding a browser would read the body in (the WHATWG names encoding-sniffer uses: 'UTF-8', 'windows-1252').
 * A BOM and a valid header charset are decided from the first bytes; only without them are 1024 bytes sniffed.
 */
function encodingOf(bytes: Buffer, label: string | undefined): string {
  if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) return 'UTF-8';
  if (bytes[0] === 0xfe && bytes[1] === 0xff) return 'UTF-16BE';
  if (bytes[0] === 0xff && bytes[1] === 0xfe) return 'UTF-16LE';
  // The constructor maps the label (a label the Encoding Standard does not know leaves the default) and reads nothing.
  const byLabel = new Sniffer({ transportLayerEncodingLabel: label, defaultEncoding: 'utf-8', maxBytes: SNIFF_BYTES });
  if (byLabel.resultType === ResultType.PASSED) return byLabel.encoding;
  byLabel.write(bytes.subarray(0, SNIFF_BYTES));
  return byLabel.encoding;
}

/** decodeBody, and whether the header's charset garbled the text that the page's own would have read cleanly. */
export function decodeChecked(
  bytes: Buffer,
  contentType: string | null,
): { readonly text: string; readonly conflict: CharsetConflict | null } {
  const text = decodeBody(bytes, contentType);
  const label = charsetLabel(contentType);
  // Cheap first: only a header charset that a meta contradicts is looked at any further.
  if (!label) return { text, conflict: null };
  const head = bytes.subarray(0, SNIFF_BYTES);
  // No declaration can be there without one of these words: most pages stop here.
  if (!/charset|encoding/i.test(head.toString('latin1'))) return { text, conflict: null };
  // Text the header's charset reads cleanly is never a conflict, whatever the meta says: no need to sniff it.
  if (!garbled(text)) return { text, conflict: null };
  const byHeader = sniff(head, label);
  const byPage = sniff(head, undefined);
  if (byHeader.resultType !== ResultType.PASSED) return { text, conflict: null };
  if (byPage.resultType !== ResultType.META_TAG && byPage.resultType !== ResultType.XML_ENCODING)
    return { text, conflict: null };
  if (byHeader.encoding === byPage.encoding) return { text, conflict: null };
  const other = decodeBuffer(bytes, { userEncoding: byPage.encoding });
  if (other === text || garbled(other)) return { text, conflict: null };
  return { text, conflict: { header: byHeader.encoding, meta: byPage.encoding } };
}

/**
 * UTF-8 read as windows-1252 / latin1: a lead byte (Â Ã Ä Å … for U+0080-U+07FF, â for U+0800-U+FFFF) followed by
 * what a continuation byte (0x80-0xBF) reads as in windows-1252: "CrÃ¨me", "â€™", "Ã©".
 */
const MOJIBAKE =
  /[\u00C2-\u00DF\u00E2][\u0080-\u00BF\u0152\u0153\u0160\u0161\u0178\u017D\u017E\u0192\u02C6\u02DC\u2013\u2014\u2018-\u201E\u2020-\u2022\u2026\u2030\u2039\u203A\u20AC\u2122]/;

const garbled = (s: string) => s.includes('\uFFFD') || MOJIBAKE.test(s);

function charsetLabel(contentType: string | null): string | undefined {
  return /;\s*charset\s*=\s*["']?([^;"'\s]+)/i.exec(contentType ?? '')?.[1];
}

function sniff(head: Buffer, label: string | undefined): Sniffer {
  const s = new Sniffer({ transportLayerEncodingLabel: label, defaultEncoding: 'utf-8', maxBytes: SNIFF_BYTES });
  s.write(head);
  return s;
}
