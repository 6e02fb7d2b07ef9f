import assert from 'node:assert/strict';
import { parseTask } from '../../src/core/task/parse';
import { formatStep } from '../../src/core/task/actions';
import { credentialVariables } from '../../src/core/task/secrets';
import { fixed } from '../../src/core/autoscale/range';
import { workerArgs } from '../../src/worker/args';

// `browser.actions` (issue 30) as people write them: every form with its defaults, and each mistake said at its
// line and field.

const HEAD =
  'name: t\nstart: [https://example.com/]\nrules:\n  - name: page\n    browser:\n      timeout: 30s\n      actions:\n';
/** The task with `lines` as the rule's actions (each indented under `actions:`); the first action is on line 8. */
const parse = (lines: string[], allowScripts?: boolean) =>
  parseTask(
    HEAD + lines.map((l) => `        ${l}\n`).join(''),
    't.crawl.yaml',
    allowScripts === undefined ? {} : { allowScripts },
  );
const errors = (lines: string[], allowScripts?: boolean) =>
  parse(lines, allowScripts).diagnostics.filter((d) => d.severity === 'error');

describe('task files: browser.actions', () => {
  it('reads every action, with its defaults', () => {
    const { task, diagnostics } = parse([
      '- scroll: { selector: .entry, count: 60, max: 10 }',
      '- scroll: {}',
      '- click: button.more',
      '- click: { selector: button.more, untilGone: true, idle: 2s, timeout: 20s }',
      '- click: { selector: .banner .ok, optional: true }',
      '- wait: networkidle',
      '- wait: 500ms',
      '- wait: { selector: .result, state: visible }',
      "- fill: { selector: 'input[name=q]', value: '${CRAWL_STUDIO_QUERY}' }",
      '- select: { selector: "#sort", value: desc }',
      '- press: Enter',
      "- press: { selector: 'input[name=q]', key: Enter }",
      '- evaluate: scripts/expand.js',
    ]);
    assert.deepEqual(diagnostics, []);
    assert.deepEqual(task!.rules[0]!.browser!.actions, [
      { kind: 'scroll', selector: '.entry', count: 60, max: 10, idleMs: 1_000, timeoutMs: 10_000 },
      { kind: 'scroll', selector: null, count: null, max: 20, idleMs: 1_000, timeoutMs: 10_000 },
      {
        kind: 'click',
        selector: 'button.more',
        untilGone: false,
        max: 1,
        idleMs: 1_000,
        optional: false,
        timeoutMs: 10_000,
      },
      {
        kind: 'click',
        selector: 'button.more',
        untilGone: true,
        max: 50,
        idleMs: 2_000,
        optional: false,
        timeoutMs: 20_000,
      },
      {
        kind: 'click',
        selector: '.banner .ok',
        untilGone: false,
        max: 1,
        idleMs: 1_000,
        optional: true,
        timeoutMs: 10_000,
      },
      { kind: 'wait', for: { kind: 'networkidle' }, timeoutMs: 10_000 },
      { kind: 'wait', for: { kind: 'delay', ms: 500 }, timeoutMs: 10_000 },
      { kind: 'wait', for: { kind: 'selector', selector: '.result', state: 'visible' }, timeoutMs: 10_000 },
      { kind: 'fill', selector: 'input[name=q]', value: '${CRAWL_STUDIO_QUERY}', timeoutMs: 10_000 },
      { kind: 'select', selector: '#sort', value: 'desc', timeoutMs: 10_000 },
      { kind: 'press', key: 'Enter', selector: null, timeoutMs: 10_000 },
      { kind: 'press', key: 'Enter', selector: 'input[name=q]', timeoutMs: 10_000 },
      { kind: 'evaluate', file: 'scripts/expand.js', timeoutMs: 10_000 },
    ]);
  });

  it('caps the default timeout at a shorter render timeout', () => {
    const { task } = parseTask(
      'name: t\nstart: [https://example.com/]\nrules:\n  - name: page\n    browser: { timeout: 4s, actions: [ { scroll: {} } ] }\n',
      't.crawl.yaml',
    );
    assert.equal(task!.rules[0]!.browser!.actions[0]!.timeoutMs, 4_000);
  });

  const cases: [string, string[], number, string, RegExp][] = [
    [
      'an unknown action, with the one meant',
      ['- scrol: { max: 3 }'],
      8,
      'rules[0].browser.actions[0].scrol',
      /unknown field 'scrol'; did you mean 'scroll'\?/,
    ],
    [
      'two actions in one entry',
      ['- { scroll: {}, click: .more }'],
      8,
      'rules[0].browser.actions[0]',
      /one action an entry, not 'scroll' and 'click'/,
    ],
    [
      'a count without the selector it counts',
      ['- scroll: { count: 60 }'],
      8,
      'rules[0].browser.actions[0].scroll.count',
      /'count' counts the elements of 'selector'/,
    ],
    [
      'a broken selector',
      ['- click: "button[["'],
      8,
      'rules[0].browser.actions[0].click',
      /is not a valid CSS selector/,
    ],
    [
      'a broken selector in an object',
      ['- wait: networkidle', '- wait: { selector: "a:::b" }'],
      9,
      'rules[0].browser.actions[1].wait.selector',
      /is not a valid CSS selector/,
    ],
    [
      "a timeout past the render's",
      ['- click: { selector: .more, timeout: 1m }'],
      8,
      'rules[0].browser.actions[0].click.timeout',
      /longer than the render's timeout \(30000 ms\)/,
    ],
    [
      "a pause past the render's timeout",
      ['- wait: 40s'],
      8,
      'rules[0].browser.actions[0].wait',
      /never ends within the render's timeout/,
    ],
    [
      'a wait that is no wait',
      ['- wait: soon'],
      8,
      'rules[0].browser.actions[0].wait',
      /must be networkidle, a duration such as 500ms, or \{ selector: \.\.\. \}/,
    ],
    [
      'max without untilGone',
      ['- click: { selector: .more, max: 5 }'],
      8,
      'rules[0].browser.actions[0].click.max',
      /'max' bounds the clicks of 'untilGone: true'/,
    ],
    ['too many scrolls', ['- scroll: { max: 5000 }'], 8, 'rules[0].browser.actions[0].scroll.max', /1000/],
    [
      'a variable a task file may not read',
      ["- fill: { selector: '#q', value: '${HOME}' }"],
      8,
      'rules[0].browser.actions[0].fill.value',
      /\$\{HOME\} is not expanded/,
    ],
    [
      'a script outside the folder',
      ['- evaluate: ../elsewhere/x.js'],
      8,
      'rules[0].browser.actions[0].evaluate',
      /outside the task file's folder/,
    ],
    [
      'a script by absolute path',
      ['- evaluate: { file: /etc/x.js }'],
      8,
      'rules[0].browser.actions[0].evaluate.file',
      /outside the task file's folder/,
    ],
    [
      'a script that is not JavaScript',
      ['- evaluate: notes.txt'],
      8,
      'rules[0].browser.actions[0].evaluate',
      /not a JavaScript file/,
    ],
    [
      'a fill without its value',
      ["- fill: { selector: '#q' }"],
      8,
      'rules[0].browser.actions[0].fill',
      /missing required field 'value'/,
    ],
  ];
  for (const [what, lines, line, path, message] of cases) {
    it(`says where: ${what}`, () => {
      const errs = errors(lines);
      assert.equal(errs.length, 1, JSON.stringify(errs.map((e) => e.message)));
      assert.equal(errs[0]!.file, 't.crawl.yaml');
      assert.equal(errs[0]!.line, line);
      assert.equal(errs[0]!.path, path);
      assert.match(errs[0]!.message, message);
    });
  }

  it('refuses a script where scripts are not allowed (the CLI without --allow-scripts), at its line', () => {
    const lines = ['- scroll: {}', '- evaluate: scripts/expand.js'];
    assert.deepEqual(errors(lines), [], "the editor's diagnostics do not decide it");
    assert.deepEqual(errors(lines, true), []);
    const errs = errors(lines, false);
    assert.equal(errs.length, 1);
    assert.equal(errs[0]!.line, 9);
    assert.equal(errs[0]!.path, 'rules[0].browser.actions[1].evaluate');
    assert.match(errs[0]!.message, /'scripts\/expand\.js' runs a script of the workspace .* --allow-scripts/);
    assert.equal(parse(lines, false).task, null);
  });

  it('applies to a task-wide browser, located there', () => {
    const { diagnostics } = parseTask(
      'name: t\nstart: [https://example.com/]\nbrowser:\n  actions:\n    - scroll: { count: 3 }\nrules:\n  - name: page\n',
      't.crawl.yaml',
    );
    const errs = diagnostics.filter((d) => d.severity === 'error');
    assert.equal(errs.length, 1);
    assert.equal(errs[0]!.path, 'browser.actions[0].scroll.count');
    assert.equal(errs[0]!.line, 5);
  });

  it('reports a step in one line, never a typed value', () => {
    assert.equal(
      formatStep({
        index: 0,
        kind: 'scroll',
        action: 'scroll (.entry until 60)',
        count: 60,
        unit: 'elements',
        ms: 1234,
        error: null,
      }),
      'scroll (.entry until 60): 60 elements in 1.2 s',
    );
    assert.equal(
      formatStep({
        index: 1,
        kind: 'click',
        action: 'click button.more until gone',
        count: 2,
        unit: 'clicks',
        ms: 80,
        error: null,
      }),
      'click button.more until gone: 2 clicks in 80 ms',
    );
    assert.equal(
      formatStep({ index: 2, kind: 'press', action: 'press Enter', count: null, unit: null, ms: 5, error: null }),
      'press Enter: 5 ms',
    );
    assert.equal(
      formatStep({
        index: 3,
        kind: 'wait',
        action: 'wait for .x',
        count: null,
        unit: null,
        ms: 10_000,
        error: 'timed out after 10000 ms',
      }),
      'wait for .x: failed after 10.0 s: timed out after 10000 ms',
    );
  });

  it('names the variables form actions type, for the editor to look up in Secret Storage', () => {
    const { task } = parse([
      "- fill: { selector: '#q', value: 'x ${CRAWL_STUDIO_QUERY}' }",
      "- select: { selector: '#s', value: '${CRAWL_STUDIO_SORT}' }",
    ]);
    assert.deepEqual(credentialVariables(task!), ['CRAWL_STUDIO_QUERY', 'CRAWL_STUDIO_SORT']);
  });

  it('passes --allow-scripts to the workers a run spawns only when the run has it', () => {
    assert.ok(workerArgs(['t.crawl.yaml'], { concurrency: fixed(4), allowScripts: true }).includes('--allow-scripts'));
    assert.ok(!workerArgs(['t.crawl.yaml'], { concurrency: fixed(4) }).includes('--allow-scripts'));
  });
});
