import { LineCounter } from 'yaml';
import { MAX_YAML_DEPTH, parseYamlBounded } from './yamlDocument';
// ajv's standalone code for crawl-task.schema.json, generated at build time (scripts/esbuild-task-validator.mjs).
import validateSchema from 'virtual:task-schema-validator';
import type { TaskDiagnostic } from './diagnostics';
import { loginLeaks } from './secrets';
import { checkReachability } from './reachability';
import type { CrawlTask } from './model';
import { makeChecker, type Env } from './checker';
import { DiagnosticSink, sortByPosition, yamlMessage, type Path } from './diagnosticSink';
import { relevantErrors, reportSchemaError, salvage } from './schemaErrors';
import { buildAccess } from './parseAccess';
import { buildRules } from './parseRules';
import { buildStart, BULK_URLS_HINT } from './parseStart';
import { buildCanonical, buildPoliteness, buildRequestSettings, buildScope, requestTimeout } from './parseSettings';
import { buildSchedule } from './parseSchedule';
import { buildNotify, buildStore, type StoreFileCheck } from './parseStore';
import type { RawTask } from './rawTask';

// A task file's text to a CrawlTask: YAML (bounded), the JSON schema (shapes, with its errors as sentences), then
// the semantic checks of each part, every problem at its field. The parts live beside this file, one concern each:
// rules (parseRules.ts), items, fields and follows (parseItems.ts), start pages and sitemaps (parseStart.ts),
// sessions, login and proxy (parseAccess.ts), scope, request and politeness (parseSettings.ts), store and notify
// (parseStore.ts), schedule (parseSchedule.ts).

export { MAX_DURATION_MS } from './checker';
export { MAX_START_URLS } from './parseStart';
export type { TaskDefinition } from './rawTask';

export interface ParseResult {
  /** Null when any error was found. */
  readonly task: CrawlTask | null;
  readonly diagnostics: readonly TaskDiagnostic[];
}

/**
 * Largest task file, in characters (about bytes): a task is rules and a few start URLs, and the editor re-parses
 * the file as it is typed. Bulk URLs belong in the queue (crawl-studio enqueue), not in the file.
 */
export const MAX_TASK_FILE_CHARS = 5 * 1024 * 1024;

/** What only the caller can give, having the process and the file system: the parse itself does no I/O. */
export interface ParseChecks {
  /**
   * The environment the file's `${VAR}`s are read from (store.url's are expanded, unset `${CRAWL_STUDIO_*}` are
   * warned of): the caller's process.env, passed in (workspace/taskFile.ts parseTaskText). Absent: none is set.
   */
  readonly env?: Env;
  /**
   * Why the SQLite file a relative store.url names (as written, relative to the task file's folder) is not in
   * that folder once symlinks are resolved; null when it is. See workspace/storePlace.ts.
   */
  readonly storeFile?: StoreFileCheck;
  /** false: a `browser.actions` script (`evaluate`) is an error (see actions.ts); absent: not checked. */
  readonly allowScripts?: boolean;
}

/** Parses and validates a task file's text. Pure: the caller reads the file (and may pass `checks` that read more). */
export function parseTask(text: string, file: string, checks: ParseChecks = {}): ParseResult {
  const lineCounter = new LineCounter();
  if (text.length > MAX_TASK_FILE_CHARS) {
    lineCounter.addNewLine(0); // not parsed, so line 1 is the only one known
    const diags = new DiagnosticSink(file, text, lineCounter, null);
    diags.atOffsets(
      0,
      0,
      '',
      `the file is ${(text.length / 1024 / 1024).toFixed(1)} MB, more than the ${MAX_TASK_FILE_CHARS / 1024 / 1024} MB a task file may be; ${BULK_URLS_HINT}`,
      'error',
    );
    return { task: null, diagnostics: diags.list };
  }
  const parsed = parseYamlBounded(text, { lineCounter, prettyErrors: false, uniqueKeys: true });
  if (!parsed.ok) {
    const diags = new DiagnosticSink(file, text, lineCounter, null);
    diags.atOffsets(
      parsed.offset,
      parsed.offset + 1,
      '',
      `the file nests collections more than ${MAX_YAML_DEPTH} levels deep; a task file needs far fewer`,
      'error',
    );
    return { task: null, diagnostics: diags.list };
  }
  const doc = parsed.doc;
  const diags = new DiagnosticSink(file, text, lineCounter, doc);

  for (const err of syntaxErrorsToShow(doc.errors)) {
    const [start, end] = err.pos;
    diags.atOffsets(start, end ?? start + 1, '', yamlMessage(err.message), 'error');
  }
  for (const warn of doc.warnings) {
    diags.atOffsets(warn.pos[0], warn.pos[1] ?? warn.pos[0] + 1, '', yamlMessage(warn.message), 'warning');
  }
  if (doc.errors.length > 0) return { task: null, diagnostics: diags.list };

  let value: unknown;
  try {
    // maxAliasCount bounds alias expansion: a "billion laughs" file is an error, not a hang.
    value = doc.toJS({ maxAliasCount: 100 });
  } catch (err) {
    diags.atPath([], err instanceof Error ? err.message : String(err));
    return { task: null, diagnostics: diags.list };
  }
  if (value === null || value === undefined) {
    diags.atPath([], 'the file is empty: a task needs at least `name`, `start` and `rules`');
    return { task: null, diagnostics: diags.list };
  }

  if (!validateSchema(value)) {
    const errors = relevantErrors(validateSchema.errors ?? []);
    for (const e of errors) reportSchemaError(diags, e);
    // Check the parts the schema found well-shaped too, so one pass reports every mistake in the file.
    const broken = errors.map((e) => e.instancePath);
    const isBroken = (path: Path) => {
      const p = path.length ? '/' + path.join('/') : '';
      return broken.some((b) => b === p || b.startsWith(p + '/'));
    };
    try {
      buildTask(salvage(value, isBroken), file, diags, checks);
    } catch {
      // A shape the salvage did not foresee: the schema errors already explain the file.
    }
    return { task: null, diagnostics: sortByPosition(diags.list) };
  }
  const task = buildTask(value as RawTask, file, diags, checks);
  for (const leak of loginLeaks(task)) diags.atPath(leak.path, leak.message);
  if (!diags.hasErrors) checkReachability(task, diags);
  return { task: diags.hasErrors ? null : task, diagnostics: sortByPosition(diags.list) };
}

function buildTask(raw: RawTask, file: string, diags: DiagnosticSink, checks: ParseChecks): CrawlTask {
  const c = makeChecker(diags, checks.env ?? {}, checks.allowScripts);
  const timeoutMs = requestTimeout(raw, c);
  const { rules, checkRuleRef } = buildRules(raw, c, timeoutMs);
  const { start, sitemaps } = buildStart(raw, rules, checkRuleRef, c);
  const request = buildRequestSettings(raw, timeoutMs, c);
  const scope = buildScope(raw, start, sitemaps, c);
  return {
    name: raw.name,
    file,
    start,
    sitemaps,
    scope,
    request,
    politeness: buildPoliteness(raw, c),
    ...buildAccess(raw, c),
    canonical: buildCanonical(raw),
    store: buildStore(raw.store, c, checks.storeFile),
    schedule: buildSchedule(raw.schedule, diags),
    notify: buildNotify(raw.notify, diags),
    rules,
  };
}

/**
 * The YAML errors worth showing: the first, and any later duplicate key (an independent mistake). What follows a
 * syntax error is the parser losing its footing, not more mistakes: a missing `}` gave three errors on the next
 * line (issue 23, item 10). They show up again, if real, once the first is fixed.
 */
function syntaxErrorsToShow<E extends { readonly code: string }>(errors: readonly E[]): E[] {
  return errors.filter((e, i) => i === 0 || e.code === 'DUPLICATE_KEY');
}
