import type { BrowserSpec, CrawlTask } from '../../core/task/model';
import { DEFAULTS } from '../../core/task/model';
import type { FetchedPage, FetchOptions } from '../../worker/fetcher';
import type { BrowserPool } from '../../worker/browser/pool';
import type { RenderHooks } from '../../worker/browser/render';

// The designer's "Browser" toggle: the page as a worker would render it, in a Chromium of the extension host's
// own (the same pool and render code as the workers'). The page's scripts run only in that headless browser; the
// preview shows the rendered HTML, scripts off, in its sandboxed frame, so the picker works on the rendered DOM.
// The browser is launched on the first rendered preview and closed after a minute unused.

const IDLE_CLOSE_MS = 60_000;

let pool: { readonly path: string; readonly pool: BrowserPool } | null = null;
let idle: NodeJS.Timeout | undefined;

/** What the worker would render `rule`'s pages with: its own `browser`, else the task's first, else the defaults. */
export function previewSpec(task: CrawlTask | null, rule: string | null): BrowserSpec {
  const rules = task?.rules ?? [];
  const spec = rules.find((r) => r.name === rule)?.browser ?? rules.find((r) => r.browser)?.browser;
  return (
    spec ?? {
      waitFor: { kind: 'load' },
      block: DEFAULTS.browserBlock,
      timeoutMs: task?.request.timeoutMs ?? DEFAULTS.timeoutMs,
      screenshot: 'never',
      actions: [],
    }
  );
}

/** `hooks`: the rule's actions' scripts (a trusted workspace only), their variables, and each step as it ends. */
export async function renderForPreview(
  url: string,
  spec: BrowserSpec,
  opts: FetchOptions,
  browserPath: string | undefined,
  hooks: Pick<RenderHooks, 'scripts' | 'env' | 'onStep'> = {},
): Promise<FetchedPage> {
  // Loaded here, not at the top: the extension host pays for the browser code only when the toggle is on.
  const [{ findBrowser }, { BrowserPool }, { poolRenderer }] = await Promise.all([
    import('../../worker/browser/executable'),
    import('../../worker/browser/pool'),
    import('../../worker/browser/render'),
  ]);
  const path = findBrowser(browserPath);
  if (pool && pool.path !== path) {
    void pool.pool.close();
    pool = null;
  }
  pool ??= { path, pool: new BrowserPool({ executablePath: path, maxOpenPages: 2 }) };
  clearTimeout(idle);
  try {
    return await poolRenderer(pool.pool).render(url, spec, { ...opts, cookies: undefined }, hooks);
  } finally {
    idle = setTimeout(() => void closePreviewBrowser(), IDLE_CLOSE_MS);
    idle.unref();
  }
}

/** Closes the preview's browser (on deactivation, and after a minute unused). */
export async function closePreviewBrowser(): Promise<void> {
  clearTimeout(idle);
  const p = pool;
  pool = null;
  await p?.pool.close();
}
