import * as cheerio from 'cheerio/slim';

// Selector validity is decided by the same engine that runs the selectors (cheerio-select), so a
// selector the validator accepts is one the workers can run, :contains() and friends included.

let empty: cheerio.CheerioAPI | null = null;

/** Returns null when valid, else a short reason. */
export function checkSelector(selector: string): string | null {
  empty ??= cheerio.load('<html><body></body></html>');
  try {
    empty.root().find(selector);
    return null;
  } catch (err) {
    const msg = (err instanceof Error ? err.message : String(err)).split('\n')[0]!;
    // css-what reports a selector cut short as "Expected name, found " (nothing after "found").
    if (/found\s*$/.test(msg)) return `${msg.trim().replace(/,? found$/, '')}: the selector ends too early`;
    return msg;
  }
}
