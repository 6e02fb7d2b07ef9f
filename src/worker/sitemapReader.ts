import { Readable, pipeline } from 'node:stream';
import { createGunzip } from 'node:zlib';
import { SitemapParser, type SitemapEntry, type SitemapFormat } from '../core/sitemap/parser';
import { MAX_SITEMAP_BYTES } from '../core/sitemap/route';
import { FetchFailure, type StreamedResponse } from './fetcher';

// A sitemap's body, read as it downloads: un-gzipped when it is a .gz file, counted, decoded as UTF-8 (the protocol's
// only encoding) and parsed, its entries handed on in batches. Whether it is gzipped is decided by its first two
// bytes, not by its name or Content-Type: servers send .xml.gz files as application/octet-stream, application/x-gzip
// or text/xml, with or without Content-Encoding (which fetchStream has undone already). The bytes counted are the
// XML's, after every decompression, so a gzip bomb stops at MAX_SITEMAP_BYTES however small it is on the wire.

/** Entries handed on at once: one discover call and one addBulk each (frontier/pageFlow.ts chunks by 1000). */
const SITEMAP_BATCH = 1000;

export interface SitemapRead {
  readonly format: SitemapFormat | null;
  /** The XML root element, when the document had one. */
  readonly root: string | null;
  /** The sitemap's bytes after decompression. */
  readonly bytes: number;
  readonly gzipped: boolean;
  /** The reading stopped because `onBatch` said so. */
  readonly stopped: boolean;
}

/**
 * Reads `res` to its end, calling `onBatch` with every SITEMAP_BATCH entries (and the rest at the end) and waiting for
 * it: the download pauses meanwhile, so what is held is one batch, not the sitemap. `onBatch` returns false to stop
 * reading (nothing more can be enqueued). Throws a FetchFailure 'too-large' past `maxBytes`.
 */
export async function readSitemap(
  res: StreamedResponse,
  opts: { readonly alternates: boolean; readonly maxBytes?: number },
  onBatch: (entries: SitemapEntry[]) => Promise<boolean>,
): Promise<SitemapRead> {
  const maxBytes = opts.maxBytes ?? MAX_SITEMAP_BYTES;
  const parser = new SitemapParser({ alternates: opts.alternates });
  const text = new TextDecoder('utf-8');
  const source = { gzipped: false };
  let bytes = 0;
  let pending: SitemapEntry[] = [];
  let stopped = false;
  try {
    for await (const xml of xmlBytes(res.chunks, source)) {
      bytes += xml.byteLength;
      if (bytes > maxBytes) {
        const mb = Math.round(maxBytes / 1024 / 1024);
        throw new FetchFailure(
          'too-large',
          `sitemap ${res.finalUrl} ${source.gzipped ? 'decompresses to' : 'is'} more than ${mb} MB, the sitemap protocol's limit: read stopped at ${mb} MB (pages taken before stay queued)`,
          false,
          res.status,
        );
      }
      parser.write(text.decode(xml, { stream: true }));
      for (const e of parser.take()) pending.push(e);
      while (pending.length >= SITEMAP_BATCH && !stopped) {
        stopped = !(await onBatch(pending.slice(0, SITEMAP_BATCH)));
        pending = pending.slice(SITEMAP_BATCH);
      }
      if (stopped) break;
    }
  } catch (err) {
    // What was read before a sitemap turned out too large is sound (every entry closed): it is crawled.
    if (err instanceof FetchFailure && err.cause_ === 'too-large' && !stopped) {
      for (let i = 0; i < pending.length; i += SITEMAP_BATCH)
        if (!(await onBatch(pending.slice(i, i + SITEMAP_BATCH)))) break;
    }
    if (err instanceof FetchFailure) throw err;
    // zlib's errors ("incorrect header check", "unexpected end of file"): the file itself is broken, a retry will not mend it.
    throw new FetchFailure(
      'network',
      `sitemap ${res.finalUrl} could not be read: ${err instanceof Error ? err.message : String(err)}`,
      false,
      res.status,
    );
  }
  if (!stopped) {
    parser.write(text.decode());
    parser.end();
    for (const e of parser.take()) pending.push(e);
    for (let i = 0; i < pending.length && !stopped; i += SITEMAP_BATCH)
      stopped = !(await onBatch(pending.slice(i, i + SITEMAP_BATCH)));
  }
  return { format: parser.format, root: parser.root, bytes, gzipped: source.gzipped, stopped };
}

/**
 * The sitemap's own bytes: the body as it is, or inflated when it starts with gzip's magic bytes. Inflated output comes
 * in zlib's pieces (16 KB at most) and only as fast as it is read, so a bomb never inflates further than the reader's
 * cap lets it.
 */
async function* xmlBytes(chunks: AsyncIterable<Buffer>, source: { gzipped: boolean }): AsyncGenerator<Buffer> {
  const it = chunks[Symbol.asyncIterator]();
  const first = await it.next();
  if (first.done) return;
  const all = (async function* () {
    yield first.value;
    for (;;) {
      const next = await it.next();
      if (next.done) return;
      yield next.value;
    }
  })();
  if (!(first.value.byteLength >= 2 && first.value[0] === 0x1f && first.value[1] === 0x8b)) {
    yield* all;
    return;
  }
  source.gzipped = true;
  const gunzip = createGunzip();
  const compressed = Readable.from(all, { objectMode: false });
  pipeline(compressed, gunzip, () => undefined);
  try {
    for await (const out of gunzip as AsyncIterable<Buffer>) yield out;
  } finally {
    gunzip.destroy();
    compressed.destroy();
  }
}
