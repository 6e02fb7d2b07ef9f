// Dates of sitemaps: <lastmod> as the protocol writes it (W3C Datetime), and a task's `since`, a date or an age.

/** YYYY, YYYY-MM, YYYY-MM-DD, then optionally Thh:mm[:ss[.s…]] and a zone (Z or ±hh:mm), as W3C Datetime has it. */
const W3C =
  /^(\d{4})(?:-(\d{2})(?:-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d+)?)?\s*(Z|[+-]\d{2}:?\d{2})?)?)?)?$/i;

/**
 * A <lastmod> as ms since the epoch, or null when it is not a date (sites write all sorts: such an entry is then
 * kept, as if it had none). A date without a zone is read as UTC.
 */
export function parseLastmod(text: string | null): number | null {
  if (!text) return null;
  const m = W3C.exec(text.trim());
  if (!m) return null;
  const [, y, mo = '01', d = '01', h = '00', mi = '00', s = '00', zone] = m;
  const month = Number(mo);
  const day = Number(d);
  if (month < 1 || month > 12 || day < 1 || day > 31 || Number(h) > 23 || Number(mi) > 59 || Number(s) > 60)
    return null;
  let offsetMin = 0;
  if (zone && zone.toUpperCase() !== 'Z') {
    const z = /^([+-])(\d{2}):?(\d{2})$/.exec(zone)!;
    offsetMin = (z[1] === '-' ? -1 : 1) * (Number(z[2]) * 60 + Number(z[3]));
  }
  const ms = Date.UTC(Number(y), month - 1, day, Number(h), Number(mi), Number(s)) - offsetMin * 60_000;
  // Date.UTC rolls 2026-02-31 over into March: a day the month does not have is not a date.
  if (new Date(Date.UTC(Number(y), month - 1, day)).getUTCDate() !== day) return null;
  return ms;
}

/** A task's `since`: entries last modified before it are not crawled. */
export type Since = { readonly kind: 'date'; readonly ms: number } | { readonly kind: 'age'; readonly ms: number };

const AGE = /^\s*(\d+(?:\.\d+)?)\s*(m|h|d|w)\s*$/;
const AGE_MS: Record<string, number> = { m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

/**
 * `2026-01-01`, `2026-01-01T08:00:00Z` (a date), or `30d`, `12h`, `2w` (an age, counted back from when the sitemap
 * is read, so a scheduled crawl takes what changed since its previous run). Null when it is neither.
 */
export function parseSince(value: string): Since | null {
  const age = AGE.exec(value);
  if (age) return { kind: 'age', ms: Math.round(Number(age[1]) * AGE_MS[age[2]!]!) };
  const ms = parseLastmod(value);
  return ms === null ? null : { kind: 'date', ms };
}

/** The moment `since` stands for when a sitemap is read at `nowMs`. */
export function sinceCutoff(since: Since, nowMs: number): number {
  return since.kind === 'date' ? since.ms : nowMs - since.ms;
}
