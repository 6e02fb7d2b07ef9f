import assert from 'node:assert/strict';
import { needsBrowser } from '../../src/core/task/model';
import { parseTask } from '../../src/core/task/parse';

// The `browser` syntax of task files (issue 18): as people write it, with its defaults and its mistakes.

const task = (body: string) => parseTask(`name: t\nstart: [https://example.com/]\n${body}`, 't.crawl.yaml');

describe('task files: browser', () => {
  it('leaves every rule fetched when no browser is asked for', () => {
    const { task: t } = task('rules:\n  - name: page\n');
    assert.ok(t);
    assert.equal(t.rules[0]!.browser, null);
    assert.equal(needsBrowser(t), false);
  });

  it('true at the top renders every rule with the defaults; a rule can opt out', () => {
    const { task: t, diagnostics } = task(
      'request: { timeout: 7s }\nbrowser: true\nrules:\n  - name: a\n  - name: b\n    browser: false\n',
    );
    // Rules nothing routes to are warned about (issue 21, item 2); these tasks are about the browser syntax only.
    assert.deepEqual(
      diagnostics.filter((d) => !/can never be reached/.test(d.message)),
      [],
    );
    assert.ok(t);
    assert.deepEqual(t.rules[0]!.browser, {
      waitFor: { kind: 'load' },
      block: ['image', 'font', 'media'],
      timeoutMs: 7_000,
      screenshot: 'never',
      actions: [],
    });
    assert.equal(t.rules[1]!.browser, null);
    assert.equal(needsBrowser(t), true);
  });

  it('reads each form of waitFor, block and timeout', () => {
    const { task: t, diagnostics } = task(`rules:
  - name: sel
    browser: { waitFor: { selector: .item }, block: [], timeout: 20s }
  - name: idle
    browser: { waitFor: networkidle, block: [image, stylesheet] }
  - name: pause
    browser: { waitFor: 2s, screenshot: failure }
`);
    // Rules nothing routes to are warned about (issue 21, item 2); these tasks are about the browser syntax only.
    assert.deepEqual(
      diagnostics.filter((d) => !/can never be reached/.test(d.message)),
      [],
    );
    assert.ok(t);
    assert.deepEqual(t.rules[0]!.browser, {
      waitFor: { kind: 'selector', selector: '.item' },
      block: [],
      timeoutMs: 20_000,
      screenshot: 'never',
      actions: [],
    });
    assert.deepEqual(t.rules[1]!.browser, {
      waitFor: { kind: 'networkidle' },
      block: ['image', 'stylesheet'],
      timeoutMs: 15_000,
      screenshot: 'never',
      actions: [],
    });
    assert.deepEqual(t.rules[2]!.browser!.waitFor, { kind: 'delay', ms: 2_000 });
    assert.equal(t.rules[2]!.browser!.screenshot, 'failure');
  });

  it('reports mistakes at their field', () => {
    const cases: [string, RegExp, string][] = [
      [
        'browser: { waitFor: soon }',
        /must be load, domcontentloaded, networkidle, a duration/,
        'rules[0].browser.waitFor',
      ],
      ['browser: { waitFor: { selector: "a[" } }', /not a valid CSS selector/, 'rules[0].browser.waitFor.selector'],
      ['browser: { block: [images] }', /must be one of 'image'/, 'rules[0].browser.block[0]'],
      ['browser: { waitFor: 30s, timeout: 10s }', /never ends within the render's timeout/, 'rules[0].browser.waitFor'],
      ['browser: { headless: false }', /unknown field 'headless'/, 'rules[0].browser.headless'],
      ['browser: { screenshot: yes }', /must be one of 'never'/, 'rules[0].browser.screenshot'],
    ];
    for (const [line, message, path] of cases) {
      const { task: t, diagnostics } = task(`rules:\n  - name: r\n    ${line}\n`);
      assert.equal(t, null, line);
      assert.ok(
        diagnostics.some((d) => message.test(d.message) && d.path === path),
        `${line}: ${JSON.stringify(diagnostics.map((d) => [d.path, d.message]))}`,
      );
    }
  });
});
