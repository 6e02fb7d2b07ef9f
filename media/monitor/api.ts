// The monitor's JSON API: reads, and actions with the token in a header. Every path is relative to the page
// (`api/tasks`, not `/api/tasks`), so the page works behind a reverse proxy that serves it under a path of its own
// (https://ops.example/crawl/ → the monitor's /).

import { byId, withCode } from '../shared/dom';

export async function get<T>(path: string): Promise<T> {
  const r = await fetch(path, { cache: 'no-store' });
  const body = (await r.json()) as T & { error?: string };
  if (!r.ok) throw new Error(body.error ?? `HTTP ${r.status}`);
  return body;
}

export function say(text: string, error = false): void {
  const m = byId('message');
  m.replaceChildren(...withCode(text));
  m.className = error ? 'error' : '';
}

/**
 * Asks the server to act on a task (with the token, when there is one); what it answered shows in the message line.
 * Resolves with whether the server did it.
 */
export async function act(token: string, task: string, action: string, body: unknown = {}): Promise<boolean> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (token) headers['x-crawl-studio-token'] = token;
  try {
    const r = await fetch(`api/tasks/${encodeURIComponent(task)}/${action}`, {
      method: 'POST',
      headers,
      body: JSON.stringify(body),
    });
    const res = (await r.json()) as { message?: string; error?: string };
    if (r.ok) say(res.message ?? 'done');
    else say(`${action} refused (${r.status}): ${res.error ?? ''}`, true);
    return r.ok;
  } catch (err) {
    say(`${action} failed: ${err instanceof Error ? err.message : String(err)}`, true);
    return false;
  }
}
