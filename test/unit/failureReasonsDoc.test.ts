import { strict as assert } from 'node:assert';
import { readFileSync } from 'node:fs';
import { FAILURE_REASONS, failureReasonRow, SKIP_REASONS } from '../../src/core/task/failureReasons';
import { failureGroupOf } from '../../src/observe/failures';
import { skipReasonOf } from '../../src/frontier/outcomes';
import { FetchFailure, proxyAuthFailure } from '../../src/worker/fetcher';
import { BrowserFailure, NavigationRefused } from '../../src/worker/browser/render';

// docs/failures.md explains every reason a page can fail or be skipped for (issue 30): its tables list exactly the
// reasons of src/core/task/failureReasons.ts, which the code's failure groups are typed against.

/** The reasons in the first column of the table under `heading`, in order. */
function tableReasons(doc: string, heading: string): string[] {
  const at = doc.indexOf(`\n## ${heading}\n`);
  assert.ok(at >= 0, `docs/failures.md has a "## ${heading}" section`);
  const section = doc.slice(at + 1).split(/\n## /)[0]!;
  return section
    .split('\n')
    .filter((l) => l.startsWith('| `'))
    .map((l) => /^\| `([^`]+)` \|/.exec(l)![1]!);
}

describe('docs/failures.md: a table of every failure and skip reason', () => {
  const doc = readFileSync('docs/failures.md', 'utf8');

  it('lists exactly the failure reasons of the code, and exactly its skip reasons', () => {
    assert.deepEqual(tableReasons(doc, 'Failed pages'), Object.keys(FAILURE_REASONS));
    assert.deepEqual(tableReasons(doc, 'Skipped pages'), Object.keys(SKIP_REASONS));
  });

  it('is linked from the README', () => {
    assert.match(readFileSync('README.md', 'utf8'), /\]\(docs\/failures\.md\)/);
  });

  it('the groups the worker records and the ones read back from messages are rows of the table', () => {
    const groups = [
      new FetchFailure('http', 'HTTP 404', false, 404).group,
      new FetchFailure('timeout', 'x', true).group,
      proxyAuthFailure('proxy http://127.0.0.1:1 refused its credentials (HTTP 407)').group,
      new FetchFailure('proxy', 'x', true).group,
      new BrowserFailure('hung', 'x').group,
      new BrowserFailure('crash', 'x').group,
      new BrowserFailure('closed', 'x').group,
      failureGroupOf('HTTP 503 Service Unavailable fetching http://a/'),
      failureGroupOf('browser.actions[0] (click x): timed out after 10 ms'),
      failureGroupOf('job stalled more than allowable limit'),
      failureGroupOf('something nobody knows'),
    ];
    for (const g of groups) assert.ok(failureReasonRow(g), `${g} is a row of FAILURE_REASONS`);
    assert.equal(failureReasonRow('http-404'), 'http-NNN');
    assert.equal(failureReasonRow('no-such-reason'), null);
  });

  it('the skip reasons the worker records are rows of the table', () => {
    const row = (r: string) => (r.startsWith('navigated-') ? 'navigated-REASON' : r);
    const skips = [
      'robots.txt',
      "no rule 'gone' in the task",
      'no sitemap entry 3 in the task',
      new NavigationRefused('http://b/', 'offsite').group,
      new NavigationRefused('http://b/', 'robots.txt').group,
    ];
    for (const s of skips) assert.ok(Object.hasOwn(SKIP_REASONS, row(skipReasonOf(s))), `${s} → ${skipReasonOf(s)}`);
  });
});
