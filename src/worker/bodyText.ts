import { decodeBuffer } from 'encoding-sniffer';

// A response body's text, in a module of its own so that the analysis thread's bundle (dist/analysis.js) can decode
// the bytes a page arrived as without loading the fetcher (undici): the worker's main thread hands it the bytes
// (fetcher.ts FetchedPage.raw), not the text (issue 36).

/**
 * The body's text, decoded once so the workers and the designer's preview agree. The encoding is found in
 * the WHATWG order (encoding-sniffer, the sniffer cheerio uses): a BOM, then the Content-Type header's charset,
 * then a `<meta charset>` / `<meta http-equiv="Content-Type">` or `<?xml encoding=...?>` in the first 1024 bytes.
 * Labels map as the Encoding Standard says (iso-8859-1, latin1 and us-ascii mean windows-1252). Without any hint
 * the default is UTF-8, not the spec's windows-1252: what a crawler of today's sites meets. Invalid bytes become
 * U+FFFD rather than failing, so a broken page still parses.
 */
export function decodeBody(bytes: Buffer, contentType: string | null): string {
  const label = /;\s*charset\s*=\s*["']?([^;"'\s]+)/i.exec(contentType ?? '')?.[1];
  return decodeBuffer(bytes, { transportLayerEncodingLabel: label, defaultEncoding: 'utf-8' });
}
