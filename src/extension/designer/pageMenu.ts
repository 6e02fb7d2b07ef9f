import type { PreviewRequest } from '../../core/designer/preview';
import type { PageChoice } from '../../core/designer/protocol';
import { buildRequest, requestKey } from '../../core/request/build';
import type { CrawlTask } from '../../core/task/model';
import { outlineTask } from '../../core/task/outline';
import type { PageSource } from './pages';

// The preview's page menu: the task's start entries (a request's first page among them), its sitemaps, and the
// pages cached for the task file.

/**
 * The menu for `task` (else the start URLs the outline of `text` finds, for a file with errors). The requests its
 * entries open are added to `requests`, by the key the webview sends back.
 */
export async function pageMenu(
  task: CrawlTask | null,
  text: string,
  source: PageSource,
  requests: Map<string, PreviewRequest>,
): Promise<PageChoice[]> {
  // Start entries that send a body or count pages are opened as their first request (from the parsed task).
  const built: PageChoice[] = [];
  task?.start.forEach((s, i) => {
    if (!s.request) return;
    const b = buildRequest(s.request, {}, undefined, { start: i });
    if (!b.ok) return;
    const key = requestKey(b.built.url, b.built.request);
    requests.set(key, { url: b.built.url, request: b.built.request, series: b.built.series });
    built.push({
      url: b.built.url,
      key,
      kind: 'start',
      label: `start: ${b.built.request ? `${b.built.request.method} ` : ''}${b.built.url}${b.built.series ? ` (page ${b.built.series.page})` : ''}`,
    });
  });
  // Plain start URLs: the parsed task's, else (a file with errors) those the outline finds.
  const plain = task
    ? task.start.filter((s) => !s.request).map((s) => s.url)
    : outlineTask(text)
        .startUrls.map((s) => s.url)
        .filter((u) => /^https?:\/\//.test(u) && !/\{[A-Za-z_]/.test(u));
  const sitemaps = task?.sitemaps.map((s) => s.url) ?? [];
  const cached = await source.list();
  const shown = new Set([...plain, ...built.map((b) => b.key!)]);
  for (const m of cached)
    if (m.key && m.request && !requests.has(m.key))
      requests.set(m.key, { url: m.url, request: m.request, series: null });
  return [
    ...plain.map((url): PageChoice => ({ url, kind: 'start', label: `start: ${url}` })),
    ...built,
    ...sitemaps.map((url): PageChoice => ({ url, kind: 'sitemap', label: `sitemap: ${url}` })),
    ...cached
      .filter((m) => !shown.has(m.key ?? m.url))
      .map((m): PageChoice => ({
        url: m.url,
        kind: 'cached',
        label: `cached: ${m.request ? `${m.request.method} ` : ''}${m.url}`,
        ...(m.key ? { key: m.key } : {}),
      })),
  ];
}
