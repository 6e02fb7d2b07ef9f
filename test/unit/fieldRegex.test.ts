import { strict as assert } from 'node:assert';
import { formatDiagnostic } from '../../src/core/task/diagnostics';
import { parseTask } from '../../src/core/task/parse';
import { analysePage } from '../../src/core/pipeline/page';
import { urlFacts } from '../support/pageFacts';

// Issue 22, item 6: a field regex such as `(a+)+$` on a long field stalled a worker for seconds per page. Fields
// run on RE2 (re2js), linear in the text; what RE2 cannot run is refused at parse time, at the field.

describe('field regexes (issue 22)', () => {
  describe('field regexes (RE2, linear time)', () => {
    const task = (regex: string) => `name: t
start: [https://example.com/]
rules:
  - name: r
    items:
      - type: t
        fields:
          f: { selector: p, regex: ${JSON.stringify(regex)} }
`;
    const extract = (regex: string, text: string) => {
      const { task: t, diagnostics } = parseTask(task(regex), 't.yaml');
      assert.deepEqual(diagnostics.map(formatDiagnostic), []);
      // Across structuredClone, as the task reaches the analysis thread.
      const cloned = structuredClone(t!);
      const out = analysePage(cloned, {
        facts: urlFacts('https://example.com/'),
        html: `<p>${text}</p>`,
        rule: cloned.rules[0]!,
        depth: 0,
      });
      return out.items[0]?.data.f ?? null;
    };

    it('runs a catastrophic pattern on a long field in linear time', () => {
      // V8's backtracking engine takes about 4 s on 26 characters here, and doubles with each one more: on 50,000
      // it would never return, so a backtracking engine fails this test by its timeout, on any machine. How fast
      // the linear engine is belongs to bench/ (timings are asserted nowhere).
      assert.equal(extract('(a+)+$', 'a'.repeat(26) + '!'), null);
      assert.equal(extract('(a+)+$', 'a'.repeat(50_000) + '!'), null);
    });

    it('keeps the semantics: first group, else the whole match; JavaScript syntax', () => {
      assert.equal(extract('[0-9.]+', 'Price: £51.77 incl.'), '51.77');
      assert.equal(extract('In stock \\((\\d+) available\\)', 'In stock (22 available)'), '22');
      assert.equal(extract('(x)?y+', 'yyy'), 'yyy', 'a group that took no part: the whole match');
      assert.equal(extract('(?<n>\\d+)', 'n=42'), '42');
      assert.equal(extract('\\u00e9(.)', 'caf\u00e9!'), '!');
      assert.equal(extract('^\\w+$', 'two words'), null);
    });

    for (const [regex, what] of <[string, string][]>[
      ['(?<=\\$)\\d+', 'lookbehind'],
      ['\\d+(?= EUR)', 'lookahead'],
      ['(a)\\1', 'backreference'],
      ['(?<q>.)\\k<q>', 'named backreference'],
    ]) {
      it(`refuses a ${what} at parse time, naming the field and the regex`, () => {
        const { task: t, diagnostics } = parseTask(task(regex), 't.yaml');
        assert.equal(t, null);
        assert.equal(diagnostics.length, 1, diagnostics.map(formatDiagnostic).join('\n'));
        const line = formatDiagnostic(diagnostics[0]!);
        assert.ok(
          line.startsWith(
            `t.yaml:8:36: error: rules[0].items[0].fields.f.regex: '${regex}' cannot be used: it uses a ${what}`,
          ),
          line,
        );
        assert.match(line, /RE2/);
      });
    }

    it('still reports a syntax error as one', () => {
      const { diagnostics } = parseTask(task('([a-z'), 't.yaml');
      assert.match(
        formatDiagnostic(diagnostics[0]!),
        /fields\.f\.regex: '\(\[a-z' cannot be used: it is not a valid regular expression: /,
      );
    });
  });
});
