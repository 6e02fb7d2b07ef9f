import type { CrawlTask, PageRule } from '../core/task/model';
import { canonicalize } from '../core/url/canonical';
import { decideLink } from '../core/url/scope';
import type { RobotsCache } from '../frontier/robots';
import { keepScreenshot } from '../frontier/screenshots';
import type { Redis } from '../redis/connect';
import { LateContentPolicy } from './browser/lateContent';
import type { RenderHooks } from './browser/render';

// What a rendered page of a crawl checks as it goes (browser/render.ts): where it may navigate, where its
// screenshots go, whether its cards are watched after load.

export interface RenderHookDeps {
  readonly task: CrawlTask;
  readonly redis: Redis;
  readonly robots: RobotsCache;
  readonly log: (level: 'info' | 'warn' | 'error', message: string) => void;
  /** The workspace scripts the task's `browser.actions` may run (absent: none may; see browser/actions.ts). */
  readonly scripts?: ReadonlyMap<string, string>;
}

export class CrawlRenderHooks {
  /** Which rendered pages are watched for cards that come after load (browser/lateContent.ts). */
  private readonly lateContent = new LateContentPolicy();

  constructor(private readonly deps: RenderHookDeps) {}

  /** The hooks of one page: `requested` as queued, of `run`, read by `rule`. */
  for(requested: string, run: string, rule: PageRule): RenderHooks {
    const late = this.lateContent.checkFor(rule);
    return {
      ...(late ? { late } : {}),
      scripts: this.deps.scripts,
      navigation: (to) => this.navigation(requested, to),
      screenshot: async (shot) => {
        await keepScreenshot(
          this.deps.redis,
          this.deps.task.name,
          run,
          { url: shot.url, finalUrl: shot.finalUrl, at: Date.now(), why: shot.why },
          shot.jpeg,
        ).catch((err: Error) => this.deps.log('warn', `screenshot of ${shot.url} not kept: ${err.message}`));
      },
    };
  }

  /**
   * A place the page went to by itself is checked as a link would be: scope (offsite, allow and deny patterns,
   * private host names) and robots.txt. Depth does not apply: it is the same page, wherever it ended up.
   */
  private async navigation(requested: string, to: string): Promise<string | null> {
    const { task } = this.deps;
    if (this.canonical(to) === this.canonical(requested)) return null;
    const d = decideLink(task, to, to, 0);
    if (!d.ok) return d.reason === 'depth' ? null : d.reason;
    if (task.request.robots) {
      // Usually cached (an in-scope origin is a start origin's). One not seen yet is fetched in a slot of its own
      // while this page holds one: were every slot held by such pages, a render's timeout would free one.
      const rules = await this.deps.robots.rulesFor(new URL(d.url).origin, task.request.userAgent);
      if (!rules.isAllowed(d.url)) return 'robots.txt';
    }
    return null;
  }

  private canonical(u: string): string {
    const c = canonicalize(u, undefined, this.deps.task.canonical);
    return c.ok ? c.url : u;
  }
}
