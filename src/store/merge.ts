import { createHash } from 'node:crypto';
import type { RevisitRecord } from '../core/pipeline/revisit';
import type { ConflictPolicy, ErrorRow, ItemRow, PageRow } from './types';

// Turns a batch of raw stream entries into rows: validates every page and item, records what is malformed as
// error rows (never failing the batch), and collapses repeats of one (type, key) so a store sees each key at
// most once per transaction. Pure: no I/O, so it is tested without Redis or a database.

export interface MergeLimits {
  /** Largest serialised item (its data as JSON), in UTF-8 bytes. */
  readonly maxItemBytes: number;
  /** Largest key, in UTF-8 bytes: PostgreSQL's btree cannot index much more than 2.7 kB. */
  readonly maxKeyBytes: number;
}

export const DEFAULT_LIMITS: MergeLimits = { maxItemBytes: 1024 * 1024, maxKeyBytes: 2048 };

/** A stream entry after JSON parsing; `value` is unknown until validated. */
export interface DecodedEntry {
  readonly id: string;
  readonly value: unknown;
  /** Set when the entry could not be parsed at all. */
  readonly error: string | null;
  /** Items the entry carries (0 when unparseable), for sizing batches before merging. */
  readonly itemCount: number;
}

export interface MergedBatch {
  readonly pages: PageRow[];
  readonly items: ItemRow[];
  readonly errors: ErrorRow[];
  /** Items seen in the entries, valid or not. */
  readonly received: number;
  /** Valid items dropped because the same (type, key) came earlier (or, under 'update', later) in the batch. */
  readonly duplicates: number;
}

/** Parses one entry's field list ([field, value, ...] as Redis returns it); a null list is a deleted entry. */
export function decodeEntry(id: string, fields: readonly string[] | null, field = 'p'): DecodedEntry {
  if (!fields) return { id, value: null, error: 'stream entry was deleted before it was read', itemCount: 0 };
  let raw: string | undefined;
  for (let i = 0; i + 1 < fields.length; i += 2) if (fields[i] === field) raw = fields[i + 1];
  if (raw === undefined) return { id, value: null, error: `stream entry has no '${field}' field`, itemCount: 0 };
  try {
    const value: unknown = JSON.parse(raw);
    const items = isObject(value) && Array.isArray(value.items) ? value.items.length : 0;
    return { id, value, error: null, itemCount: items };
  } catch (err) {
    return { id, value: null, error: `stream entry is not valid JSON: ${(err as Error).message}`, itemCount: 0 };
  }
}

export function mergeBatch(
  entries: readonly DecodedEntry[],
  policy: ConflictPolicy,
  limits: MergeLimits = DEFAULT_LIMITS,
): MergedBatch {
  const pages = new Map<string, PageRow>();
  const items = new Map<string, ItemRow>();
  const errors: ErrorRow[] = [];
  let received = 0;
  let duplicates = 0;

  for (const entry of entries) {
    let n = 0;
    const errorId = () => `${entry.id}/${n++}`;
    if (entry.error !== null) {
      if (entry.value === null && entry.error.startsWith('stream entry was deleted')) continue;
      errors.push(invalid(errorId(), null, entry.error, null, null));
      continue;
    }
    const page = readPage(entry.value);
    if (typeof page === 'string') {
      const url = isObject(entry.value) && typeof entry.value.url === 'string' ? clean(entry.value.url) : null;
      errors.push(invalid(errorId(), null, `stream entry ${entry.id} is not a page record: ${page}`, null, null, url));
      continue;
    }
    received += page.rawItems.length;
    const pageKey = `${page.row.run}\n${page.row.method} ${page.row.url}\n${page.row.body}`;
    const prevPage = pages.get(pageKey);
    if (!prevPage || prevPage.fetchedAt <= page.row.fetchedAt) pages.set(pageKey, page.row);

    for (const problem of page.problems) {
      errors.push({ ...base(errorId(), 'extract', page.row), type: problem.type, key: null, message: problem.message });
    }
    page.rawItems.forEach((raw, index) => {
      const item = readItem(raw, page.row, limits);
      if (typeof item === 'string') {
        const type = isObject(raw) && typeof raw.type === 'string' ? clean(raw.type) : null;
        const key = isObject(raw) && typeof raw.key === 'string' ? clean(raw.key).slice(0, 200) : null;
        errors.push({ ...base(errorId(), 'invalid', page.row), type, key, message: `item ${index}: ${item}` });
        return;
      }
      const id = `${item.type}\n${item.key}`;
      const prev = items.get(id);
      if (!prev) {
        items.set(id, item);
        return;
      }
      duplicates++;
      // 'ignore' keeps what was stored first, so within a batch the first occurrence wins; 'update' keeps the
      // newest fetch, the same rule the stores apply against stored rows.
      if (policy === 'update' && item.fetchedAt >= prev.fetchedAt) items.set(id, item);
    });
  }
  return { pages: [...pages.values()], items: [...items.values()], errors, received, duplicates };
}

interface ParsedPage {
  readonly row: PageRow;
  readonly rawItems: readonly unknown[];
  readonly problems: readonly { type: string; message: string }[];
}

/**
 * Longest request body a page row keeps: the body is part of the row's identity (a unique index), and an index
 * entry must stay small (PostgreSQL's btree takes about 2,700 bytes); a longer one keeps its start and a hash.
 */
export const MAX_BODY_LABEL = 600;

function storedBody(body: string): string {
  if (body.length <= MAX_BODY_LABEL) return body;
  return `${body.slice(0, MAX_BODY_LABEL - 20)}…#${createHash('sha1').update(body).digest('hex').slice(0, 16)}`;
}

function readPage(v: unknown): ParsedPage | string {
  if (!isObject(v)) return 'not an object';
  const run = v.run;
  const url = v.url;
  if (typeof run !== 'string' || run === '') return "missing 'run'";
  if (typeof url !== 'string' || url === '') return "missing 'url'";
  if (typeof v.fetchedAt !== 'number' || !Number.isFinite(v.fetchedAt)) return "missing 'fetchedAt'";
  if (!Array.isArray(v.items)) return "missing 'items'";
  const problems = Array.isArray(v.problems)
    ? v.problems.filter(isObject).map((p) => ({
        type: typeof p.type === 'string' ? clean(p.type) : '',
        message: clean(typeof p.message === 'string' ? p.message : JSON.stringify(p)),
      }))
    : [];
  const row: PageRow = {
    run: clean(run),
    url: clean(url),
    method: typeof v.method === 'string' && /^[A-Z]{1,10}$/.test(v.method) ? v.method : 'GET',
    body: typeof v.body === 'string' ? storedBody(clean(v.body)) : '',
    rule: typeof v.rule === 'string' ? clean(v.rule) : '',
    depth: typeof v.depth === 'number' ? v.depth : 0,
    status: typeof v.status === 'number' ? v.status : null,
    fetchedAt: Math.round(v.fetchedAt),
    contentType: typeof v.contentType === 'string' ? clean(v.contentType) : null,
    bytes: typeof v.bytes === 'number' && v.bytes >= 0 ? Math.round(v.bytes) : 0,
  };
  const revisit = readRevisit(v.revisit);
  return { row: revisit ? { ...row, revisit } : row, rawItems: v.items, problems };
}

/** A page's revisit record (conditional re-crawl); anything malformed is dropped, which only costs a full fetch. */
function readRevisit(v: unknown): RevisitRecord | null {
  if (!isObject(v)) return null;
  const str = (x: unknown) => (typeof x === 'string' ? clean(x) : null);
  if (typeof v.finalUrl !== 'string' || typeof v.shape !== 'string' || typeof v.items !== 'number') return null;
  const links =
    v.links === null || v.links === undefined
      ? null
      : typeof v.links === 'string' && /^[A-Za-z0-9+/]*={0,2}$/.test(v.links)
        ? v.links
        : undefined;
  if (links === undefined) return null;
  return {
    etag: str(v.etag),
    lastModified: str(v.lastModified),
    finalUrl: clean(v.finalUrl),
    shape: clean(v.shape),
    items: Math.max(0, Math.round(v.items)),
    links,
  };
}

function readItem(v: unknown, page: PageRow, limits: MergeLimits): ItemRow | string {
  if (!isObject(v)) return 'not an object';
  if (typeof v.type !== 'string' || v.type === '') return "missing or empty 'type'";
  if (v.type.length > 128) return `type is ${v.type.length} characters long, more than 128`;
  if (typeof v.key !== 'string' || v.key === '') return "missing or empty 'key'";
  const keyBytes = Buffer.byteLength(v.key);
  if (keyBytes > limits.maxKeyBytes) {
    return `key is ${keyBytes} bytes, more than ${limits.maxKeyBytes}: choose key fields with shorter values`;
  }
  if (!isObject(v.data)) return "'data' is not an object";
  let json: string;
  try {
    json = JSON.stringify(v.data);
  } catch (err) {
    return `data cannot be serialised: ${(err as Error).message}`;
  }
  // Stores cannot hold U+0000 (PostgreSQL text and jsonb) or lone surrogates (jsonb): replace them, rather than
  // losing the item for one unprintable character.
  let data = v.data;
  if (UNSTORABLE_ESCAPE.test(json)) {
    data = cleanDeep(data) as Record<string, unknown>;
    json = JSON.stringify(data);
  }
  const bytes = Buffer.byteLength(json);
  if (bytes > limits.maxItemBytes)
    return `item is ${bytes} bytes of JSON, more than the ${limits.maxItemBytes} allowed`;
  return {
    type: clean(v.type),
    key: clean(v.key),
    json,
    fields: Object.keys(data),
    url: page.url,
    rule: page.rule,
    run: page.run,
    fetchedAt: page.fetchedAt,
  };
}

// JSON.stringify writes U+0000 as \u0000 and lone surrogates as \udXXX: matching the escapes finds both in one
// regex pass (a false hit on an escaped backslash only costs the precise pass).
const UNSTORABLE_ESCAPE = /\\u(?:0000|d[89a-f][0-9a-f]{2})/i;
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/** Replaces U+0000 and lone surrogates, which no store can hold, by U+FFFD. */
export function clean(s: string): string {
  return s.replaceAll('\u0000', '\ufffd').replace(LONE_SURROGATE, '\ufffd');
}

function cleanDeep(v: unknown): unknown {
  if (typeof v === 'string') return clean(v);
  if (Array.isArray(v)) return v.map(cleanDeep);
  if (isObject(v)) {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) out[clean(k)] = cleanDeep(x);
    return out;
  }
  return v;
}

function base(id: string, kind: ErrorRow['kind'], page: PageRow): Omit<ErrorRow, 'type' | 'key' | 'message'> {
  return { id, kind, run: page.run, url: page.url, rule: page.rule, at: page.fetchedAt };
}

function invalid(
  id: string,
  run: string | null,
  message: string,
  type: string | null,
  key: string | null,
  url: string | null = null,
): ErrorRow {
  // An unparseable entry has no fetch time; the id's ms part is when it was buffered, which is stable on replay.
  const at = Number(id.split('-')[0]) || 0;
  return { id, kind: 'invalid', run, url, rule: null, type, key, message: clean(message), at };
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
