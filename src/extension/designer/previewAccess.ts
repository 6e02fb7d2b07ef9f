import { createHash } from 'node:crypto';
import type { CrawlTask } from '../../core/task/model';
import { credentialVariables, expandProxyUrl } from '../../core/task/secrets';
import { createAccess, type Access } from '../../worker/access';
import { proxyName, type FetchOptions } from '../../worker/fetcher';
import { MemorySessions } from '../../worker/sessions';

// The preview fetches a page of a task with `session`, `login` or `proxy` the way a worker does: the worker's own
// access code (worker/access.ts: the login form with its CSRF token, the session's cookies, the proxies and their
// failover), with one session kept in this process's memory instead of the fleet's in Redis, so previewing never
// needs a Redis. Credentials come from Secret Storage and the editor's environment, as Start Crawl hands them to
// its workers; they stay in this process and never reach the webview or a message.

type Env = Readonly<Record<string, string | undefined>>;

/** Secret Storage's values for a task's `${CRAWL_STUDIO_*}` variables (crawlSecrets.ts). */
export interface SecretSource {
  envFor(task: CrawlTask): Promise<Record<string, string>>;
}

export class PreviewAccess {
  private current: { key: string; access: Access | null } | null = null;

  /**
   * The access for `task` (null: a plain fetch does), made again when what it depends on changed: the task's
   * session, login or proxies, or the values of the variables they use. The session (and its login) lasts as long.
   */
  for(task: CrawlTask, env: Env, base: FetchOptions, log: (message: string) => void): Access | null {
    if (!task.session && !task.proxy) return null;
    const values = credentialVariables(task).map((n) => `${n}=${env[n] ?? ''}`);
    const key = createHash('sha256')
      .update(JSON.stringify([task.name, task.session, task.login, task.proxy, values]))
      .digest('hex');
    if (this.current?.key !== key) {
      // createAccess throws, naming the field and the variable, when a proxy URL does not expand.
      const access = createAccess(
        task,
        new MemorySessions(task.session ?? { pool: 1, maxPages: null, retireOnStatus: [], retireOnSelector: null }),
        (level, message) => level !== 'info' && log(message),
        base,
        env,
      );
      this.current = { key, access };
    }
    return this.current.access;
  }

  /** Forgets the session (Refetch logs in again). */
  reset(): void {
    this.current = null;
  }
}

/** How a task's pages are fetched, for the preview's status line: never a credential. */
export function describeAccess(task: CrawlTask | null, env: Env): string | null {
  if (!task || (!task.session && !task.proxy)) return null;
  const parts: string[] = [];
  if (task.login) parts.push(`logged in at ${task.login.url}`);
  else if (task.session) parts.push('in a cookie session');
  if (task.proxy) {
    const first = expandProxyUrl(task.proxy.urls[0]!, env);
    const name = first.problems.length === 0 ? proxyName(first.url) : 'its first proxy';
    parts.push(`through ${name}${task.proxy.urls.length > 1 ? ` (of ${task.proxy.urls.length} proxies)` : ''}`);
  }
  return parts.join(', ');
}
