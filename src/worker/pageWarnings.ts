import type { FetchedPage } from './fetcher';

// What a fetched or rendered page was seen to get wrong without failing, as counters of the run's stats
// (frontier/stats.ts reads them back, the run summary warns with them): a charset that garbles the page
// (charset.ts), cards that came after a rendered page was read (browser/lateContent.ts). A log line the first time
// each host or rule shows one in this process.

export function warningCounters(page: FetchedPage, host: string, rule: string): Record<string, number> {
  const out: Record<string, number> = {};
  // The host last: it may hold a port's ':', the encodings' names and the rule's counters' prefixes never do.
  if (page.charsetConflict)
    out[`charset:${page.charsetConflict.header.toLowerCase()}:${page.charsetConflict.meta.toLowerCase()}:${host}`] = 1;
  if (page.lateContent) {
    out[`late:${rule}`] = 1;
    out[`late-at-load:${rule}`] = page.lateContent.atLoad;
    out[`late-after:${rule}`] = page.lateContent.later;
  }
  return out;
}

/** The page's warnings as log lines, each host's charset and each rule's late content said once by `seen`. */
export function warningLines(page: FetchedPage, url: string, host: string, rule: string, seen: Set<string>): string[] {
  const out: string[] = [];
  const c = page.charsetConflict;
  if (c && !seen.has(`charset ${host}`)) {
    seen.add(`charset ${host}`);
    out.push(
      `${url}: Content-Type says charset ${c.header.toLowerCase()} but the page's <meta> says ${c.meta.toLowerCase()}; read as ${c.header.toLowerCase()} (the header wins), its text looks garbled (mojibake)`,
    );
  }
  const l = page.lateContent;
  if (l && !seen.has(`late ${rule}`)) {
    seen.add(`late ${rule}`);
    out.push(
      `${url} (rule ${rule}): ${l.atLoad} link/item matches when read at load, ${l.later} a moment later: content arrives after load; use waitFor: { selector: ... } or networkidle`,
    );
  }
  return out;
}
