import type { CrawlTask } from '../task/model';
import { canonicalize } from './canonical';
import { isLocalHostname } from './hosts';
import { matchesAny } from './patterns';

// Whether a discovered link may be crawled, and if not, why: the reasons are shown to people (designer
// preview, dashboard), so each rejection names one cause.

export type DropReason =
  'invalid' | 'scheme' | 'credentials' | 'too-long' | 'offsite' | 'pattern' | 'denied' | 'private' | 'depth';

export type LinkDecision =
  | { readonly ok: true; readonly url: string; readonly host: string }
  | { readonly ok: false; readonly reason: DropReason; readonly url: string; readonly detail?: string };

export function decideLink(task: CrawlTask, href: string, base: string, depth: number): LinkDecision {
  const c = canonicalize(href, base, task.canonical);
  if (!c.ok) return { ok: false, reason: c.reason, url: href };
  const { url, host } = c;
  const { scope } = task;
  const startHost = scope.startHosts.includes(host);
  if (!startHost && !scope.allowPrivate && isLocalHostname(new URL(url).hostname)) {
    return { ok: false, reason: 'private', url };
  }
  if (scope.allow.length > 0) {
    if (!matchesAny(url, scope.allow)) return { ok: false, reason: 'pattern', url };
  } else if (!startHost) {
    return { ok: false, reason: 'offsite', url };
  }
  const denied = matchesAny(url, scope.deny);
  if (denied) return { ok: false, reason: 'denied', url, detail: denied.source };
  if (scope.maxDepth !== null && depth > scope.maxDepth) return { ok: false, reason: 'depth', url };
  return { ok: true, url, host };
}
