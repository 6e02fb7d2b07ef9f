// What the preview writes about a page and the task file, as text: pure functions (test/unit/webviewTexts.test.ts).

import type { PreviewState } from '../../src/core/designer/protocol';
import { plural } from '../shared/format';

/** How long ago an ISO time was, in the words of the status line. */
export function ago(iso: string, now = Date.now()): string {
  const s = Math.max(0, (now - Date.parse(iso)) / 1000);
  if (s < 60) return 'just now';
  if (s < 3600) return `${Math.round(s / 60)} min ago`;
  if (s < 86400) return `${Math.round(s / 3600)} h ago`;
  return `${Math.round(s / 86400)} d ago`;
}

export function kb(n: number): string {
  return n < 1024 ? `${n} B` : n < 1024 * 1024 ? `${(n / 1024).toFixed(1)} KB` : `${(n / 1024 / 1024).toFixed(1)} MB`;
}

/** The text cut at `max` characters, an ellipsis marking the cut. */
export function clip(text: string, max: number): string {
  return text.length > max ? text.slice(0, max) + '…' : text;
}

export function matches(n: number): string {
  return `${n} match${n === 1 ? '' : 'es'}`;
}

/** The status line: what is loading, the page (method, status, size, cache, redirect, actions), the rule. */
export function statusText(s: PreviewState, now = Date.now()): string {
  const parts: string[] = [];
  if (s.loading) parts.push(`${s.loading}…`);
  if (s.page) {
    if (s.page.method) parts.push(`${s.page.method}${s.page.body ? ` ${clip(s.page.body, 80)}` : ''}`);
    if (s.page.json) parts.push('JSON');
    parts.push(
      `HTTP ${s.page.status}`,
      kb(s.page.bytes),
      s.page.fromCache ? `cached copy, fetched ${ago(s.page.fetchedAt, now)}` : `fetched ${ago(s.page.fetchedAt, now)}`,
    );
    if (s.page.finalUrl !== s.page.url) parts.push(`redirected to ${s.page.finalUrl}`);
    if (s.page.actions?.length) parts.push(`actions: ${s.page.actions.join('; ')}`);
  }
  if (s.access) parts.push(s.access);
  if (s.pageWhy) parts.push(s.pageWhy);
  const a = s.analysis;
  if (s.sitemap) parts.push(s.sitemap.settings);
  else if (a?.rule.name) parts.push(`rule ${a.rule.name} (${a.rule.reason})`);
  if (a && s.page) parts.push(`updated in ${Math.round(a.timings.totalMs)} ms`);
  return parts.join(' · ');
}

/** The banner over the page: the page's error, the task file's errors, or the page's warnings ('' for none). */
export function bannerOf(s: PreviewState): { text: string; error: boolean } {
  const a = s.analysis;
  const errors = a?.diagnostics.filter((d) => d.severity === 'error').length ?? 0;
  if (s.pageError) return { text: s.pageError, error: true };
  if (a?.stale)
    return {
      text: `The task file has ${plural(errors, 'error')} (see Problems): showing what its last valid version extracts.`,
      error: false,
    };
  if (errors > 0) return { text: `The task file has ${plural(errors, 'error')}: see Problems.`, error: true };
  if (s.page?.warnings?.length) return { text: s.page.warnings.map((w) => `Warning: ${w}`).join('\n'), error: false };
  return { text: '', error: false };
}

/** The message over the frame while there is no page to show (null: the page is shown). */
export function frameMessage(s: PreviewState): string | null {
  if (s.loading && !s.page) return `${s.loading}…`;
  if (s.pageError && !s.page) return s.pageError;
  if (!s.page) return 'Pick a page: a start URL, a cached page, or any URL.';
  return null;
}
