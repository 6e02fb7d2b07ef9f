import type { Redis } from '../redis/connect';
import { deflateRawSync, inflateRawSync } from 'node:zlib';
import type { KeptLink } from '../core/pipeline/page';
import {
  conditionalHeaders,
  decodeRevisit,
  encodeRevisit,
  packLinks,
  relink,
  revisitShape,
  type Relinked,
  type RevisitRecord,
} from '../core/pipeline/revisit';
import type { CrawlTask, PageRule } from '../core/task/model';
import { fingerprintHex } from '../core/url/fingerprint';
import type { PageJobData } from '../frontier/types';
import { REVISIT_RESTORED, taskKeys } from '../frontier/keys';
import type { FetchedPage, FetchOptions } from './fetcher';

// Conditional re-crawl in the worker (`request.conditional`; the pure part is core/pipeline/revisit.ts). Each page's
// record lives in one Redis hash per task (field: the URL's fingerprint), so a worker reads it with one HGET, sent
// with the page's admission in the same write (auto-pipelining), never a store round trip. The store keeps the
// durable copy (page_validators), written from the page record like items; a new Redis gets the records back from
// it when a run starts (run/revisitRestore.ts).
//
// Cost: a run whose hash holds no record (every task's first run) never looks one up: that is known once per run.
// Pages with validators pay for keeping theirs: their kept links packed and deflated (a few hundred bytes for a page
// of 50 links) into an HSET and into the page's stream entry.

export class Revisits {
  private readonly key: string;
  private readonly shapes = new Map<string, string>();
  /** Per run: whether the hash holds any record (looked up once per run and process). */
  private readonly stocked = new Map<string, Promise<boolean>>();

  constructor(
    private readonly task: CrawlTask,
    private readonly redis: Redis,
  ) {
    this.key = taskKeys(task.name).revisits;
  }

  /** The record a page may be asked for with, or null (fetch it in full). Never throws: a lost lookup is a full fetch. */
  async lookup(data: PageJobData, rule: PageRule): Promise<RevisitRecord | null> {
    if (rule.browser) return null;
    try {
      if (!(await this.hasRecords(data.run))) return null;
      const rec = decodeRevisit(await this.redis.hget(this.key, fingerprintHex(data.url)));
      if (!rec || rec.links === null || rec.shape !== this.shape(rule) || (!rec.etag && !rec.lastModified)) return null;
      return rec;
    } catch {
      return null;
    }
  }

  /** What the fetcher sends for a record: its validators, to the URL they came from. */
  conditional(rec: RevisitRecord): NonNullable<FetchOptions['conditional']> {
    return { url: rec.finalUrl, headers: conditionalHeaders(rec) };
  }

  /**
   * A page fetched in full: its record (for the page's store entry) when it has validators, written to Redis too.
   * A page that lost its validators loses its record.
   */
  async remember(
    data: PageJobData,
    rule: PageRule,
    page: FetchedPage,
    kept: readonly KeptLink[],
    items: number,
  ): Promise<RevisitRecord | undefined> {
    if (rule.browser) return undefined;
    const field = fingerprintHex(data.url);
    const v = page.validators;
    // A record keeps links as URLs (packLinks): a page whose follows build requests (a form, a POST, a {page}
    // series) is fetched in full every time, since a 304 could not send those again as they were.
    const plain = kept.every((l) => l.request === undefined && l.series === undefined && l.next === undefined);
    if (!v || !plain) {
      if (await this.hasRecords(data.run).catch(() => false))
        await this.redis.hdel(this.key, field).catch(() => undefined);
      return undefined;
    }
    const links = deflateRawSync(packLinks(kept)).toString('base64');
    const rec: RevisitRecord = {
      etag: v.etag,
      lastModified: v.lastModified,
      finalUrl: page.finalUrl,
      shape: this.shape(rule),
      items,
      links,
    };
    // Not worth failing the page for: without it the next run fetches this page in full.
    await this.redis.hset(this.key, field, encodeRevisit(rec)).catch(() => undefined);
    return rec;
  }

  /**
   * A 304: the links its record kept, decided again at this depth, and the record for the store (links left out:
   * the stored ones stay). Validators the 304 sent anew (RFC 9110 lets it) replace the old ones.
   */
  async unchanged(
    data: PageJobData,
    rule: PageRule,
    rec: RevisitRecord,
    page: FetchedPage,
  ): Promise<Relinked & { record: RevisitRecord }> {
    const relinked = relink(
      this.task,
      rule,
      inflateRawSync(Buffer.from(rec.links ?? '', 'base64')).toString(),
      data.depth,
    );
    const etag = page.validators?.etag ?? rec.etag;
    const lastModified = page.validators?.lastModified ?? rec.lastModified;
    if (etag !== rec.etag || lastModified !== rec.lastModified) {
      await this.redis
        .hset(this.key, fingerprintHex(data.url), encodeRevisit({ ...rec, etag, lastModified }))
        .catch(() => undefined);
    }
    return { ...relinked, record: { ...rec, etag, lastModified, links: null } };
  }

  private shape(rule: PageRule): string {
    let s = this.shapes.get(rule.name);
    if (s === undefined) this.shapes.set(rule.name, (s = revisitShape(this.task, rule)));
    return s;
  }

  private hasRecords(run: string): Promise<boolean> {
    let p = this.stocked.get(run);
    if (!p) {
      p = (async () => {
        const n = await this.redis.hlen(this.key);
        return n > 1 || (n === 1 && !(await this.redis.hexists(this.key, REVISIT_RESTORED)));
      })();
      p.catch(() => this.stocked.delete(run));
      this.stocked.set(run, p);
    }
    return p;
  }
}

/** The task's revisits, or null when it does not re-crawl conditionally (nothing of this runs then). */
export function createRevisits(task: CrawlTask, redis: Redis): Revisits | null {
  return task.request.conditional ? new Revisits(task, redis) : null;
}
