import type { BrowserSpec } from '../../core/task/model';
import type { FetchedPage } from '../fetcher';
import { findBrowser } from './executable';
import { BROWSER_ARGS_ENV, BrowserPool } from './pool';
import { poolRenderer, type RenderHooks, type RenderOptions } from './render';

// One page rendered as a worker renders it (the same pool and render code, render.ts), in a browser launched for it
// and closed after: what `crawl-studio fixture save` keeps of a `browser:` rule's page.

export async function renderOnce(
  url: string,
  spec: BrowserSpec,
  opts: RenderOptions,
  browserPath?: string,
  hooks: RenderHooks = {},
): Promise<FetchedPage> {
  const pool = new BrowserPool({
    executablePath: findBrowser(browserPath),
    maxOpenPages: 1,
    extraArgs: (process.env[BROWSER_ARGS_ENV] ?? '').split(' ').filter(Boolean),
  });
  try {
    return await poolRenderer(pool).render(url, spec, opts, hooks);
  } finally {
    await pool.close();
  }
}
