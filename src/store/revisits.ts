import type { RevisitRecord } from '../core/pipeline/revisit';
import type { PageRow } from './types';

/**
 * The page_validators rows a batch writes: one per URL (a batch may hold a URL fetched in two runs, and one SQL
 * upsert cannot touch a row twice), the newest fetch's, with the links of an older full fetch when the newest is a
 * 304 (its record stands for that fetch). Sorted by URL, the lock order every upsert of the stores keeps.
 */
export function latestRevisits(pages: readonly PageRow[]): (PageRow & { revisit: RevisitRecord })[] {
  const byUrl = new Map<string, PageRow & { revisit: RevisitRecord }>();
  for (const p of pages) {
    if (!p.revisit) continue;
    const prev = byUrl.get(p.url);
    if (!prev) byUrl.set(p.url, p as PageRow & { revisit: RevisitRecord });
    else {
      const [older, newer] = prev.fetchedAt <= p.fetchedAt ? [prev, p as typeof prev] : [p as typeof prev, prev];
      byUrl.set(p.url, { ...newer, revisit: { ...newer.revisit, links: newer.revisit.links ?? older.revisit.links } });
    }
  }
  return [...byUrl.values()].sort((a, b) => (a.url < b.url ? -1 : a.url > b.url ? 1 : 0));
}
