import { followLabel, type CrawlTask } from './model';
import { MAX_URL_LENGTH } from '../url/canonical';

// The reasons a discovered link (or a sitemap entry) is dropped, as the terminal and the docs name them. One table,
// so the progress line, the summary, `status` and docs/task-file.md cannot disagree on what a label means.

export const DROP_REASONS: Readonly<Record<string, string>> = {
  pattern: 'not matched by scope.allow',
  offsite: "on a host (or port) other than the start URLs'",
  denied: 'matched by scope.deny',
  private: 'a loopback or private-network address',
  depth: 'deeper than scope.maxDepth',
  'no-rule': "no rule's match matches it",
  robots: 'disallowed by robots.txt',
  'too-long': `over ${MAX_URL_LENGTH} characters`,
  invalid: 'not a valid URL',
  scheme: 'not http(s)',
  credentials: 'has user:password in it',
  repeat: 'the same URL again on the same page or sitemap batch (kept once)',
  'sitemap-limit': 'past the 50,000 entries a sitemap is read for',
  since: "sitemap <lastmod> before the entry's since",
  follow: "a sitemap of an index that the entry's follow does not match",
  nesting: 'a sitemap index nested more than 5 levels deep',
};

/** Drops that lose a URL: `repeat` keeps the URL once, so it is shown but never counted in "dropped". */
export function droppedTotal(dropped: Readonly<Record<string, number>>): number {
  return Object.entries(dropped).reduce((a, [r, v]) => (r === 'repeat' ? a : a + v), 0);
}

/**
 * "12 links dropped (offsite: 9, depth: 3)", or null when none was: the finish message's words for the run's drops,
 * which were shown only in the preview (issue 32, item 7). `repeat` is not a dropped link (the CLI says it apart).
 */
export function droppedPhrase(dropped: Readonly<Record<string, number>>): string | null {
  const total = droppedTotal(dropped);
  if (total === 0) return null;
  return `${total.toLocaleString('en-US')} link${total === 1 ? '' : 's'} dropped (${droppedReasons(dropped)})`;
}

/** "offsite: 9, depth: 3": the reasons of a run's dropped links, the largest first (`repeat` is not a drop). */
export function droppedReasons(dropped: Readonly<Record<string, number>>): string {
  return Object.entries(dropped)
    .filter(([r, v]) => r !== 'repeat' && v > 0)
    .sort((a, b) => b[1] - a[1])
    .map(([r, v]) => `${r}: ${v.toLocaleString('en-US')}`)
    .join(', ');
}

const list = (xs: readonly { source: string }[]) => `[${xs.map((x) => `'${x.source}'`).join(', ')}]`;

/**
 * Why links were dropped for `reason` on pages of `ruleName`, in terms of the task file: the setting to look at and
 * what it currently says. Used when most of a rule's links are dropped, so the warning points at the line to fix.
 */
export function explainDrop(task: CrawlTask, ruleName: string | null, reason: string): string {
  const rule = ruleName ? task.rules.find((r) => r.name === ruleName) : undefined;
  switch (reason) {
    case 'pattern':
      return `scope.allow ${list(task.scope.allow)} matches none of them (a pattern starting with '/' matches the path, any other glob the whole absolute URL)`;
    case 'no-rule': {
      const untargeted = rule?.follow.filter((f) => f.to === null).map((f) => `'${followLabel(f)}'`) ?? [];
      const matches = task.rules.filter((r) => r.match.length > 0).map((r) => `${r.name}: ${list(r.match)}`);
      return `no rule's match matches them${untargeted.length ? ` (follow ${untargeted.join(', ')} has no 'to')` : ''}; ${matches.length ? `match patterns are ${matches.join('; ')}` : 'no rule has a match'} (a pattern starting with '/' matches the path, any other glob the whole absolute URL)`;
    }
    case 'offsite':
      return `they are on hosts other than the start URLs' (${task.scope.startHosts.join(', ')}): add a pattern for them to scope.allow`;
    case 'denied':
      return `scope.deny ${list(task.scope.deny)} matches them`;
    case 'depth':
      return `they are deeper than scope.maxDepth ${task.scope.maxDepth}`;
    case 'private':
      return 'they point to loopback or private-network addresses: set scope.allowPrivate if that is intended';
    default:
      return DROP_REASONS[reason] ?? reason;
  }
}
