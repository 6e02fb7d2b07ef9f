import { createHash } from 'node:crypto';
import { mkdir, readdir, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { analysePage, readsAsJson, ruleByName } from '../core/pipeline/page';
import { isJsonContentType } from '../core/extract/json';
import { formatDiagnostic } from '../core/task/diagnostics';
import type { CrawlTask } from '../core/task/model';
import { parseTaskText, unreadableReason } from './taskFile';
import {
  expectedFrom,
  failed,
  FIXTURE_VERSION,
  fixtureInput,
  runFixture,
  type Fixture,
  type FixtureResult,
  type TaskTestReport,
} from '../core/designer/fixtures';

// The files behind fixtures: `<task dir>/.crawl/fixtures/<task name>/<name>.html` (the page) and `<name>.json`
// (URL, rule, depth and the expected extraction). Used by the extension ("Save Page as Fixture", "Test Task")
// and by the CLI (`crawl-studio test <task>`): same files, same comparison.

export function fixtureDir(taskFile: string, taskName: string): string {
  return join(dirname(resolve(taskFile)), '.crawl', 'fixtures', taskName);
}

/** A readable, stable file name for a page: host, path and a short hash of the full URL. */
export function fixtureName(url: string): string {
  let stem: string;
  try {
    const u = new URL(url);
    stem = `${u.hostname}${u.port ? '-' + u.port : ''}${u.pathname}`;
  } catch {
    stem = 'page';
  }
  stem = stem
    .replace(/[^A-Za-z0-9._-]+/g, '-')
    .replace(/-+/g, '-')
    .replace(/^-|-$/g, '')
    .slice(0, 80);
  return `${stem}-${createHash('sha256').update(url).digest('hex').slice(0, 8)}`;
}

export interface FixturePage {
  readonly url: string;
  readonly finalUrl: string;
  readonly html: string;
  readonly status: number;
  /** ISO time of the fetch. */
  readonly fetchedAt: string;
  /** Its Content-Type: a JSON response is read as JSON by rules that read JSON. */
  readonly contentType?: string | null;
  /** Rendered in a browser (a `browser:` rule's page as a worker renders it), not the HTML as fetched. */
  readonly rendered?: boolean;
}

/** Saves the page and what `rule` extracts from it now; returns the fixture's .json path. */
export async function saveFixture(
  taskFile: string,
  task: CrawlTask,
  page: FixturePage,
  ruleName: string,
  depth: number,
): Promise<string> {
  const rule = ruleByName(task, ruleName);
  if (!rule) throw new Error(`the task has no rule '${ruleName}'`);
  const saved = {
    version: FIXTURE_VERSION,
    name: fixtureName(page.url),
    url: page.url,
    finalUrl: page.finalUrl,
    rule: ruleName,
    depth,
    savedAt: new Date().toISOString(),
    status: page.status,
    fetchedAt: page.fetchedAt,
    ...(page.contentType ? { contentType: page.contentType } : {}),
    ...(page.rendered ? { rendered: true } : {}),
  };
  // What `test` will run it as (fixtureInput), so the expectation of a `page:` field holds on every later run.
  const asJson = readsAsJson(rule, isJsonContentType(page.contentType ?? null));
  const outcome = analysePage(task, {
    ...fixtureInput({ ...saved, expected: { items: [], problems: [], links: [] } }),
    html: page.html,
    rule,
    depth,
    ...(asJson ? { json: true } : {}),
  });
  const fixture: Fixture = { ...saved, expected: expectedFrom(outcome) };
  const name = fixture.name;
  const dir = fixtureDir(taskFile, task.name);
  await mkdir(dir, { recursive: true });
  const json = join(dir, `${name}.json`);
  await writeAtomic(join(dir, `${name}.html`), page.html);
  await writeAtomic(json, JSON.stringify(fixture, null, 2) + '\n');
  return json;
}

async function writeAtomic(path: string, data: string): Promise<void> {
  const tmp = `${path}.${process.pid}.tmp`;
  await writeFile(tmp, data);
  await rename(tmp, path);
}

function isFixture(v: unknown): v is Fixture {
  const f = v as Partial<Fixture> | null;
  return (
    !!f &&
    f.version === FIXTURE_VERSION &&
    typeof f.url === 'string' &&
    typeof f.finalUrl === 'string' &&
    typeof f.rule === 'string' &&
    typeof f.depth === 'number' &&
    !!f.expected &&
    Array.isArray(f.expected.items) &&
    Array.isArray(f.expected.links) &&
    Array.isArray(f.expected.problems)
  );
}

/** Runs every fixture of the task in `taskFile`. Never throws for a broken fixture: it is a failed result. */
export async function testTaskFile(taskFile: string): Promise<TaskTestReport> {
  const file = resolve(taskFile);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    return {
      task: file,
      file,
      errors: [`cannot read ${file}: ${unreadableReason(err)}`],
      results: [],
      ok: false,
    };
  }
  const { task, diagnostics } = parseTaskText(text, file);
  if (!task) {
    return {
      task: file,
      file,
      errors: diagnostics.filter((d) => d.severity === 'error').map(formatDiagnostic),
      results: [],
      ok: false,
    };
  }
  return testTask(file, task);
}

/** The page and rule of each fixture of a task (unreadable ones left out): pages the preview can open for a rule. */
export async function fixturePages(file: string, taskName: string): Promise<{ url: string; rule: string }[]> {
  const dir = fixtureDir(file, taskName);
  const names = await readdir(dir).then(
    (n) => n.filter((x) => x.endsWith('.json')).sort(),
    () => [] as string[],
  );
  const out: { url: string; rule: string }[] = [];
  for (const n of names) {
    const f: unknown = await readFile(join(dir, n), 'utf8').then(
      (t) => JSON.parse(t) as unknown,
      () => null,
    );
    if (isFixture(f)) out.push({ url: f.url, rule: f.rule });
  }
  return out;
}

export async function testTask(file: string, task: CrawlTask): Promise<TaskTestReport> {
  const dir = fixtureDir(file, task.name);
  let names: string[];
  try {
    names = (await readdir(dir)).filter((n) => n.endsWith('.json')).sort();
  } catch {
    names = [];
  }
  if (names.length === 0) {
    return {
      task: task.name,
      file,
      errors: [
        `no fixtures in ${dir}: save one with \`crawl-studio fixture save ${file} <url>\` or from the preview ("Save Page as Fixture")`,
      ],
      results: [],
      ok: false,
    };
  }
  const results: FixtureResult[] = [];
  for (const n of names) {
    const stem = n.slice(0, -'.json'.length);
    const ref = { name: stem, url: '?', rule: '?' };
    let fixture: unknown;
    try {
      fixture = JSON.parse(await readFile(join(dir, n), 'utf8'));
    } catch (err) {
      results.push(failed(ref, `unreadable fixture ${n}: ${(err as Error).message}`));
      continue;
    }
    if (!isFixture(fixture)) {
      results.push(failed(ref, `${n} is not a fixture (version ${FIXTURE_VERSION})`));
      continue;
    }
    let html: string;
    try {
      html = await readFile(join(dir, `${stem}.html`), 'utf8');
    } catch {
      results.push(failed(fixture, `the page ${stem}.html is missing`));
      continue;
    }
    results.push(runFixture(task, { ...fixture, name: stem }, html));
  }
  return { task: task.name, file, errors: [], results, ok: results.every((r) => r.ok) };
}
