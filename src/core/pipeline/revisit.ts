import { createHash } from 'node:crypto';
import type { CrawlTask, PageRule } from '../task/model';
import { decideLink } from '../url/scope';
import { routeRule, type KeptLink } from './page';

// Conditional re-crawl, the pure part: what a page's revisit record holds (its validators, what it linked to, how
// many items it gave), when a record may be used, and a 304 page's links found again from it. A 304 has no body,
// so without the links kept from the last full fetch the re-crawl would stop at the first unchanged page.
//
// A record is only good for the task that made it: its `shape` is a hash of everything that decides what a page
// yields (its rule's follow and items, the canonical form of URLs, the scope's patterns and hosts). Edit any of it
// and the page is fetched in full again, so a 304 never keeps items or links an edited task would not extract.
// Depth and the page limits are decided again on every visit (relink), as they are for a fetched page.

/** What a re-crawl needs of a page; written by the worker (Redis) and the writer (the store's page_validators). */
export interface RevisitRecord {
  readonly etag: string | null;
  readonly lastModified: string | null;
  /** Where the validators come from (after redirects): the conditional headers go to this URL only. */
  readonly finalUrl: string;
  readonly shape: string;
  /** Items the page gave when it was last fetched in full: kept in the store, counted as unchanged. */
  readonly items: number;
  /** Its kept links, packed (see packLinks) and compressed by the caller; null on a 304 record (the stored ones stay). */
  readonly links: string | null;
}

/** The shape a page of `rule` has under `task`: records of another shape are not used. */
export function revisitShape(task: CrawlTask, rule: PageRule): string {
  const patterns = (list: readonly { source: string }[]) => list.map((p) => p.source);
  const basis = {
    v: 1,
    rule: rule.name,
    follow: rule.follow,
    items: rule.items,
    canonical: { ...task.canonical, dropParams: task.canonical.dropParams.map((r) => r.source) },
    scope: {
      allow: patterns(task.scope.allow),
      deny: patterns(task.scope.deny),
      hosts: task.scope.startHosts,
      allowPrivate: task.scope.allowPrivate,
    },
    // Routing of the links (follow `to`, else the first rule whose match matches).
    routes: task.rules.map((r) => [r.name, patterns(r.match)]),
  };
  return createHash('sha1').update(JSON.stringify(basis)).digest('hex').slice(0, 16);
}

/** A page's kept links as text: one `<follow index>\t<url>` a line (the caller compresses it). */
export function packLinks(links: readonly Pick<KeptLink, 'url' | 'follow'>[]): string {
  let out = '';
  for (const l of links) out += `${l.follow}\t${l.url}\n`;
  return out;
}

export interface Relinked {
  readonly kept: KeptLink[];
  /** Links the current visit drops (deeper than scope.maxDepth from here, or routed nowhere), by reason. */
  readonly dropped: Record<string, number>;
}

/**
 * The links of an unchanged page, from its packed record, decided again at this visit's depth: the same links a
 * full fetch would have kept, since the record's shape is the task's.
 */
export function relink(task: CrawlTask, rule: PageRule, packed: string, pageDepth: number): Relinked {
  const kept: KeptLink[] = [];
  const dropped: Record<string, number> = {};
  const depth = pageDepth + 1;
  for (const line of packed.split('\n')) {
    const tab = line.indexOf('\t');
    if (tab < 0) continue;
    const follow = Number(line.slice(0, tab));
    const spec = rule.follow[follow];
    const url = line.slice(tab + 1);
    const d = decideLink(task, url, url, depth);
    const target = d.ok ? routeRule(task, d.url, spec?.to ?? null) : null;
    if (!d.ok || !target) {
      const reason = d.ok ? 'no-rule' : d.reason;
      dropped[reason] = (dropped[reason] ?? 0) + 1;
      continue;
    }
    kept.push({ url: d.url, host: d.host, rule: target.name, depth, priority: spec?.priority ?? null, follow });
  }
  return { kept, dropped };
}

/** The record as one Redis hash value (compact JSON array, in a fixed order). */
export function encodeRevisit(r: RevisitRecord): string {
  return JSON.stringify([1, r.shape, r.items, r.etag, r.lastModified, r.finalUrl, r.links]);
}

/** A record read from Redis; null when it is not one (another version, or damaged). */
export function decodeRevisit(text: string | null | undefined): RevisitRecord | null {
  if (!text) return null;
  try {
    const a = JSON.parse(text) as unknown[];
    if (
      !Array.isArray(a) ||
      a[0] !== 1 ||
      typeof a[1] !== 'string' ||
      typeof a[2] !== 'number' ||
      typeof a[5] !== 'string'
    )
      return null;
    const str = (v: unknown) => (typeof v === 'string' ? v : null);
    return { shape: a[1], items: a[2], etag: str(a[3]), lastModified: str(a[4]), finalUrl: a[5], links: str(a[6]) };
  } catch {
    return null;
  }
}

/** The conditional request headers for a record (RFC 9110: If-None-Match wins; both are sent, as browsers do). */
export function conditionalHeaders(r: Pick<RevisitRecord, 'etag' | 'lastModified'>): Record<string, string> {
  const h: Record<string, string> = {};
  if (r.etag) h['if-none-match'] = r.etag;
  if (r.lastModified) h['if-modified-since'] = r.lastModified;
  return h;
}
