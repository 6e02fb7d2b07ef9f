import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { loadTaskFile } from '../workspace/taskFile';
import { saveFixture } from '../workspace/fixtureStore';
import { fetchPage, type FetchedPage } from '../worker/fetcher';
import { fetchOptions } from '../worker/processor';
import { ruleOptions } from '../worker/requests';
import { renderOnce } from '../worker/browser/renderOnce';
import { isJsonContentType } from '../core/extract/json';
import { routeRule } from '../core/pipeline/page';
import type { Fixture } from '../core/designer/fixtures';

/** A mistake in the command line (exit 2). */
export class FixtureUsageError extends Error {}

/**
 * `fixture save`: the editor's "Save Page as Fixture" from the terminal, through the same saveFixture (one file
 * format, one implementation), so `crawl-studio test` can run in CI without anyone opening the editor. A `browser:`
 * rule's page is rendered as a worker renders it (worker/browser/render.ts), and the fixture says so.
 */
export async function cmdFixture(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({ args, allowPositionals: true, options: { rule: { type: 'string' }, browser: { type: 'string' } } });
  if (positionals[0] !== 'save' || positionals.length !== 3) throw new FixtureUsageError('fixture save takes a task file and a URL');
  const [, taskFile, url] = positionals as [string, string, string];
  const task = await loadTaskFile(taskFile);
  const start = task.start.find((s) => s.url === url || s.url === new URL(url).href);
  const ruleName = values.rule ?? start?.rule ?? routeRule(task, url, null)?.name ?? task.rules[0]!.name;
  const rule = task.rules.find((r) => r.name === ruleName);
  if (!rule) throw new FixtureUsageError(`no rule '${ruleName}' in ${task.file}`);
  // Sent as a worker sends the rule's pages: its headers (an API key from the environment) over the task's.
  const opts = ruleOptions(task, fetchOptions(task))(rule);
  if (opts instanceof Error) throw opts;
  const page: FetchedPage = rule.browser ? await renderOnce(url, rule.browser, { ...opts, cookies: undefined }, values.browser) : await fetchPage(url, { ...opts, keepNonHtml: true });
  if (!page.isHtml && !isJsonContentType(page.contentType)) throw new Error(`${url} is neither HTML nor JSON (${page.contentType ?? 'no content type'}, HTTP ${page.status}): a fixture is a page or an API response`);
  const rendered = rule.browser !== null;
  const json = await saveFixture(task.file, task, { url, finalUrl: page.finalUrl, html: page.body, status: page.status, fetchedAt: new Date().toISOString(), contentType: page.contentType, rendered }, ruleName, 0);
  const saved = JSON.parse(readFileSync(json, 'utf8')) as Fixture;
  const how = rendered ? ', rendered in a browser' : '';
  console.log(`saved ${json} (rule ${ruleName}, HTTP ${page.status}${how}): ${saved.expected.items.length} items, ${saved.expected.links.length} links, ${saved.expected.problems.length} problems`);
  return 0;
}
