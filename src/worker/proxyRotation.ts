import type { CrawlTask } from '../core/task/model';
import { expandProxyUrl } from '../core/task/secrets';
import { FetchFailure } from './fetcher';

// A task's proxies (`proxy.urls`), in turn: a request goes through one, and through the next when that one fails.

type Log = (level: 'info' | 'warn' | 'error', message: string) => void;

export class ProxyRotation {
  private next = 0;

  /** The task's proxy URLs, their variables filled in from `env`; a template that does not expand is an error. */
  constructor(
    task: CrawlTask,
    env: Readonly<Record<string, string | undefined>>,
    private readonly log: Log,
  ) {
    // Expanded here, in the worker, once: the values stay in this process's memory.
    this.urls = (task.proxy?.urls ?? []).map((template, i) => {
      const { url, problems } = expandProxyUrl(template, env);
      if (problems.length) throw new Error(`${task.file}: proxy.urls[${i}]: ${problems.join('; ')}`);
      return url;
    });
  }

  private readonly urls: readonly string[];

  /** Where the next request that is not bound to a session's proxy starts (round robin). */
  turn(): number {
    return this.next++;
  }

  /** Requests through the proxies from `first` on: a proxy that fails is named (without credentials) and the next tried. */
  async via<T>(first: number, fetch: (proxy: string | undefined) => Promise<T>): Promise<T> {
    const proxies = this.urls;
    if (proxies.length === 0) return fetch(undefined);
    const failures: FetchFailure[] = [];
    for (let i = 0; i < proxies.length; i++) {
      const proxy = proxies[(first + i) % proxies.length]!;
      try {
        return await fetch(proxy);
      } catch (err) {
        if (!(err instanceof FetchFailure) || err.cause_ !== 'proxy') throw err;
        if (i < proxies.length - 1) this.log('warn', `${err.message}; trying another proxy`);
        failures.push(err);
      }
    }
    // A proxy that was only unreachable may answer on a retry; when every one refused its credentials (a 407), the
    // page fails at once: retrying a wrong password changes nothing.
    throw failures.findLast((f) => f.retryable) ?? failures[failures.length - 1]!;
  }
}
