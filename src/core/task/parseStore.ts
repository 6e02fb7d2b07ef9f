import { DEFAULTS, type CrawlTask } from './model';
import { DEFAULT_RETENTION, parseRetention as retentionOf, type HistoryRetention } from '../history/diff';
import { parseFieldRef, type NotifyCondition, type NotifySpec } from '../history/notify';
import { escapesFolder, expandStoreUrl, isAbsolutePath, sqlitePathOf, storeSecretProblems } from './storeUrl';
import { variableProblem } from './variables';
import type { Checker } from './checker';
import type { DiagnosticSink, Path } from './diagnosticSink';
import type { RawNotify, RawTask } from './rawTask';
import { quote } from './wording';

// Where a task's items go and who hears of their changes: `store` (its URL with its variables expanded, conflict
// policy, batching, history) and `notify` (a webhook and the changes that call it).

/**
 * Why the SQLite file a relative store.url names (as written, relative to the task file's folder) is not in that
 * folder once symlinks are resolved; null when it is. See workspace/storePlace.ts.
 */
export type StoreFileCheck = (relativePath: string) => string | null;

export function buildStore(
  raw: RawTask['store'],
  c: Checker,
  storeFile: StoreFileCheck | undefined,
): CrawlTask['store'] {
  return {
    url: raw?.url !== undefined ? storeUrl(raw.url, c, storeFile) : null,
    onConflict: raw?.onConflict ?? DEFAULTS.onConflict,
    batchSize: raw?.batchSize ?? DEFAULTS.batchSize,
    flushMs:
      raw?.flushInterval !== undefined ? c.duration(['store', 'flushInterval'], raw.flushInterval) : DEFAULTS.flushMs,
    history: parseRetention(raw?.history?.keep),
  };
}

/**
 * `store.url` with its `${VAR}`s expanded (see storeUrl.ts for which, and how): an unset or disallowed variable, a
 * URL that does not parse, or a relative SQLite path out of the task file's folder is an error at the field.
 * Messages quote the template, never the expanded value.
 */
function storeUrl(template: string, c: Checker, storeFile: StoreFileCheck | undefined): string {
  const diags = c.diags;
  const path: Path = ['store', 'url'];
  const { url, problems } = expandStoreUrl(template, c.env);
  for (const p of problems) diags.atPath(path, p.message);
  for (const p of storeSecretProblems(template, c.env)) diags.atPath(path, p);
  const sqlite = sqlitePathOf(url);
  if (sqlite !== null && !isAbsolutePath(sqlite) && escapesFolder(sqlite)) {
    diags.atPath(
      path,
      `${quote(template, 120)} points outside the task file's folder: keep the store inside it (e.g. sqlite:.crawl/items.sqlite), ` +
        'or give an absolute path to use a file elsewhere on purpose',
    );
  } else if (sqlite !== null && !isAbsolutePath(sqlite) && storeFile) {
    const problem = storeFile(sqlite);
    if (problem !== null) diags.atPath(path, problem);
  }
  return url;
}

/** store.history.keep (the schema checked its form): runs, or days. */
function parseRetention(keep: string | number | undefined): HistoryRetention {
  return keep === undefined ? DEFAULT_RETENTION : retentionOf(keep);
}

/**
 * `notify`: the webhook must be exactly one `${CRAWL_STUDIO_WEBHOOK*}` variable (the file cannot choose where a
 * run's changes go, nor send another secret there); each condition names a type or a type's field.
 */
export function buildNotify(raw: RawNotify | undefined, diags: DiagnosticSink): NotifySpec | null {
  if (!raw) return null;
  const m = /^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$/.exec(raw.webhook.trim());
  if (!m) {
    diags.atPath(
      ['notify', 'webhook'],
      `${quote(raw.webhook, 80)} is not one variable: write the webhook as \${CRAWL_STUDIO_WEBHOOK_URL} and set that variable to its URL (a task file is shared: the URL and its token stay out of it)`,
    );
  } else {
    const problem = variableProblem(m[1]!, 'webhook');
    if (problem) diags.atPath(['notify', 'webhook'], problem);
  }
  const when: NotifyCondition[] = [];
  (raw.when ?? []).forEach((c, i) => {
    const path: Path = ['notify', 'when', i];
    if ((c.changed === undefined) === (c.moved === undefined))
      return diags.atPath(path, 'a condition is either `changed: type.field` or `moved: type.field` with `percent: N`');
    if (c.changed !== undefined) return when.push({ kind: 'changed', ...parseFieldRef(c.changed) });
    const ref = parseFieldRef(c.moved!);
    if (ref.field === null)
      return diags.atPath(
        [...path, 'moved'],
        `${quote(c.moved!, 60)} names no field: write type.field, e.g. product.price`,
      );
    if (c.percent === undefined)
      return diags.atPath(path, '`moved` needs `percent: N` (how far the number must move, in percent)');
    when.push({ kind: 'moved', type: ref.type, field: ref.field, percent: c.percent });
  });
  return { webhook: raw.webhook.trim(), when };
}
