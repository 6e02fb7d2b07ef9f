import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { formatDiagnostic, TaskFileError } from '../../core/task/diagnostics';
import { parseTaskText, unreadableReason } from '../../workspace/taskFile';
import { storeChecksFor } from '../../workspace/storePlace';
import { loadTaskFile } from '../../workspace/taskFile';
import { saveFixture, testTaskFile } from '../../workspace/fixtureStore';
import { fetchPage, type FetchedPage } from '../../worker/fetcher';
import { renderOnce } from '../../worker/browser/renderOnce';
import { ALLOW_SCRIPTS_OPTION } from '../options';
import { formatStep } from '../../core/task/actions';
import { loadActionScripts } from '../../workspace/actionScripts';
import { fetchOptions } from '../../worker/processor';
import { ruleOptions } from '../../worker/requests';
import { isJsonContentType } from '../../core/extract/json';
import { routeRule } from '../../core/pipeline/page';
import { formatTestReport, type Fixture } from '../../core/designer/fixtures';
import { command, UsageError } from '../spec';
import { EXIT } from '../exitCodes';

// Commands that check a task without crawling it: validate, test (its fixtures), fixture save.

export const validateCommand = command({
  name: 'validate',
  args: '<file>...',
  summary: 'check task files; every mistake as file:line:column: error: field: message',
  options: {},
  run(_values, positionals) {
    if (positionals.length === 0) throw new UsageError('validate needs at least one file', validateCommand);
    let errors = 0;
    for (const f of positionals) {
      const file = resolve(f);
      let text: string;
      try {
        text = readFileSync(file, 'utf8');
      } catch (err) {
        console.error(`${file}: cannot read: ${unreadableReason(err)}`);
        errors++;
        continue;
      }
      const { diagnostics } = parseTaskText(text, f, storeChecksFor(file));
      for (const d of diagnostics) console.error(formatDiagnostic(d));
      const n = diagnostics.filter((d) => d.severity === 'error').length;
      errors += n;
      if (n === 0) console.log(`${f}: ok`);
      else console.error(`${f}: ${n} error${n === 1 ? '' : 's'}`);
    }
    return errors > 0 ? EXIT.FAILED : EXIT.OK;
  },
});

export const testCommand = command({
  name: 'test',
  args: '<task.crawl.yaml>',
  summary: "re-run the task's fixtures, a diff per changed field; exit 1 on a change",
  options: {},
  async run(_values, positionals) {
    if (positionals.length !== 1) throw new UsageError('test takes one task file', testCommand);
    // The same fixture check as the editor's "Test Task": pages saved with "Save Page as Fixture" re-extracted.
    const report = await testTaskFile(positionals[0]!);
    console.log(formatTestReport(report));
    return report.ok ? EXIT.OK : EXIT.FAILED;
  },
});

/**
 * `fixture save`: the editor's "Save Page as Fixture" from the terminal, through the same saveFixture (one file
 * format, one implementation), so `crawl-studio test` can run in CI without anyone opening the editor. A `browser:`
 * rule's page is rendered as a worker renders it (worker/browser/renderOnce.ts), and the fixture says so.
 */
export const fixtureCommand = command({
  name: 'fixture',
  args: 'save <task.crawl.yaml> <url>',
  summary: 'save a page (rendered for a browser rule) and what the task extracts from it, as a fixture for `test`',
  options: {
    rule: {
      type: 'string',
      value: 'R',
      help: "the rule (default: the start URL's, else the first whose match matches)",
    },
    browser: {
      type: 'string',
      value: 'PATH',
      help: "the Chromium that renders a `browser` rule's page (default $CRAWL_STUDIO_BROWSER, else chromium on PATH)",
    },
    ...ALLOW_SCRIPTS_OPTION,
  },
  async run(values, positionals) {
    if (positionals[0] !== 'save' || positionals.length !== 3)
      throw new UsageError('fixture save takes a task file and a URL', fixtureCommand);
    const [, taskFile, url] = positionals as [string, string, string];
    const allowScripts = values['allow-scripts'] ?? false;
    // Scripts are refused below for the page's rule only: another rule's are not run here.
    const task = await loadTaskFile(taskFile);
    const start = task.start.find((s) => s.url === url || s.url === new URL(url).href);
    const ruleName = values.rule ?? start?.rule ?? routeRule(task, url, null)?.name ?? task.rules[0]!.name;
    const rule = task.rules.find((r) => r.name === ruleName);
    if (!rule) throw new UsageError(`no rule '${ruleName}' in ${task.file}`);
    if (!allowScripts && rule.browser?.actions.some((a) => a.kind === 'evaluate'))
      await refuseScripts(taskFile, task.rules.indexOf(rule));
    // Sent as a worker sends the rule's pages: its headers (an API key from the environment) over the task's.
    const opts = ruleOptions(task, fetchOptions(task))(rule);
    if (opts instanceof Error) throw opts;
    const page: FetchedPage = rule.browser
      ? await renderOnce(url, rule.browser, { ...opts, cookies: undefined }, values.browser, {
          ...(allowScripts ? { scripts: await loadActionScripts(task) } : {}),
          onStep: (step) => console.log(`  action ${formatStep(step)}`),
        })
      : await fetchPage(url, { ...opts, keepNonHtml: true });
    if (!page.isHtml && !isJsonContentType(page.contentType))
      throw new Error(
        `${url} is neither HTML nor JSON (${page.contentType ?? 'no content type'}, HTTP ${page.status}): a fixture is a page or an API response`,
      );
    const rendered = rule.browser !== null;
    const json = await saveFixture(
      task.file,
      task,
      {
        url,
        finalUrl: page.finalUrl,
        html: page.body,
        status: page.status,
        fetchedAt: new Date().toISOString(),
        contentType: page.contentType,
        rendered,
      },
      ruleName,
      0,
    );
    const saved = JSON.parse(readFileSync(json, 'utf8')) as Fixture;
    const how = rendered ? ', rendered in a browser' : '';
    console.log(
      `saved ${json} (rule ${ruleName}, HTTP ${page.status}${how}): ${saved.expected.items.length} items, ${saved.expected.links.length} links, ${saved.expected.problems.length} problems`,
    );
    return EXIT.OK;
  },
});

/** The parse's refusal of the rule's `evaluate` actions (without --allow-scripts), at their lines. */
async function refuseScripts(taskFile: string, ruleIndex: number): Promise<void> {
  try {
    await loadTaskFile(taskFile, { allowScripts: false });
  } catch (err) {
    if (!(err instanceof TaskFileError)) throw err;
    // The rule's own `browser`, or the task's it takes.
    const mine = err.diagnostics.filter(
      (d) =>
        d.severity === 'error' &&
        (d.path.startsWith(`rules[${ruleIndex}].browser.actions`) || d.path.startsWith('browser.actions')),
    );
    if (mine.length > 0) throw new TaskFileError(err.file, mine);
  }
}
