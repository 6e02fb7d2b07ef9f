import type { PageFacts } from '../../src/core/extract/extract';

/** A page known only by its URL, not moved by redirects: its `page:` fields know no status or fetch time. */
export function urlFacts(url: string): PageFacts {
  return { url, finalUrl: url, status: null, fetchedAt: null };
}
