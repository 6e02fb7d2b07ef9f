import type { RunChangeCounts } from '../core/history/diff';
import { digest, notifiable, type NotifySpec } from '../core/history/notify';
import type { ItemStore } from '../store';

// Sends a finished run's changes to the task's webhook: one JSON message per run, retried with backoff, in the
// background (the run's finish never waits on it). The outcome goes into the run's summary in the store
// (`extra.notify`), with the reason of a failure; the URL, which may carry a token, is never logged or recorded.

export interface NotifyOutcome {
  readonly status: 'delivered' | 'failed' | 'skipped';
  readonly attempts: number;
  /** Why it failed, or was skipped (the condition did not hold, the variable is unset). */
  readonly reason?: string;
}

export interface DeliveryOptions {
  readonly attempts?: number;
  /** First retry's delay; doubled each retry. */
  readonly backoffMs?: number;
  readonly timeoutMs?: number;
}

/** The webhook URL from its variable (parse.ts checked the form); null when it is unset. */
function webhookUrl(spec: NotifySpec, env: NodeJS.ProcessEnv = process.env): string | null {
  const name = /^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$/.exec(spec.webhook)?.[1];
  const value = name ? env[name] : undefined;
  return value && /^https?:\/\//i.test(value) ? value : null;
}

/** POSTs the body until a 2xx answer, at most `attempts` times; the reason names the status or error, never the URL. */
export async function deliver(url: string, body: unknown, opts: DeliveryOptions = {}): Promise<NotifyOutcome> {
  const attempts = opts.attempts ?? 4;
  let delay = opts.backoffMs ?? 1_000;
  let reason = '';
  for (let i = 1; i <= attempts; i++) {
    try {
      const res = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'user-agent': 'CrawlStudio-notify' },
        body: JSON.stringify(body),
        redirect: 'error',
        signal: AbortSignal.timeout(opts.timeoutMs ?? 15_000),
      });
      await res.body?.cancel().catch(() => undefined);
      if (res.ok) return { status: 'delivered', attempts: i };
      reason = `the webhook answered HTTP ${res.status}`;
      // A 4xx other than 408/429 will not get better by retrying.
      if (res.status >= 400 && res.status < 500 && res.status !== 408 && res.status !== 429)
        return { status: 'failed', attempts: i, reason };
    } catch (err) {
      reason = `the webhook could not be reached: ${describe(err)}`;
    }
    if (i < attempts) {
      await new Promise((r) => setTimeout(r, delay));
      delay *= 2;
    }
  }
  return { status: 'failed', attempts, reason: `${reason} (after ${attempts} attempts)` };
}

/** fetch's errors quote the URL in places (a bad one, a redirect): only their kind and code are kept. */
function describe(err: unknown): string {
  const e = err as { name?: string; cause?: { code?: string } };
  if (e.name === 'TimeoutError') return 'no answer in time';
  return e.cause?.code ?? e.name ?? 'error';
}

/** Decides, sends and records the run's notification; resolves when it is recorded (never rejects). */
export async function notifyRun(
  store: ItemStore,
  task: { name: string; notify: NotifySpec | null },
  run: RunChangeCounts,
  opts: DeliveryOptions = {},
): Promise<NotifyOutcome | null> {
  const spec = task.notify;
  if (!spec) return null;
  let outcome: NotifyOutcome;
  try {
    const all = await store.history.changes({ task: task.name, runs: [run.run] });
    const matched = notifiable(spec, all);
    const url = webhookUrl(spec);
    if (matched.length === 0)
      outcome = {
        status: 'skipped',
        attempts: 0,
        reason: spec.when.length ? 'no change met notify.when' : 'nothing changed',
      };
    else if (url === null)
      outcome = {
        status: 'failed',
        attempts: 0,
        reason: `${spec.webhook} is not set to an http(s) URL in this process's environment`,
      };
    else outcome = await deliver(url, digest(task.name, run, matched, all), opts);
  } catch (err) {
    outcome = {
      status: 'failed',
      attempts: 0,
      reason: `the run's changes could not be read: ${(err as Error).message}`,
    };
  }
  await recordOutcome(store, run.run, outcome).catch(() => undefined);
  return outcome;
}

async function recordOutcome(store: ItemStore, run: string, outcome: NotifyOutcome): Promise<void> {
  const summary = (await store.readRuns()).find((r) => r.run === run);
  if (!summary) return;
  await store.writeRunSummary({ ...summary, extra: { ...(summary.extra ?? {}), notify: outcome } });
}
