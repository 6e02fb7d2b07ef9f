import { strict as assert } from 'node:assert';
import { formatDiagnostic } from '../../src/core/task/diagnostics';
import { MAX_START_URLS, MAX_TASK_FILE_CHARS, parseTask } from '../../src/core/task/parse';
import { analysePage } from '../../src/core/pipeline/page';
import { urlFacts } from '../support/pageFacts';

// Issue 22, item 7: URLs over 2,048 characters vanished without a count; task files had no size bound.

const lines = (r: ReturnType<typeof parseTask>) => r.diagnostics.map(formatDiagnostic);

describe('task file bounds (issue 22)', () => {
  describe('URL length and file bounds', () => {
    it('reports a start URL longer than the crawler accepts, at the entry', () => {
      const long = 'https://example.com/' + 'a'.repeat(2100);
      const r = parseTask(`name: t\nstart:\n  - https://example.com/\n  - ${long}\nrules:\n  - name: r\n`, 't.yaml');
      assert.equal(r.task, null);
      assert.match(
        lines(r).join('\n'),
        /^t\.yaml:4:5: error: start\[1\]: '.*' is 2120 characters long; the crawler refuses URLs over 2048/m,
      );
    });

    it('counts links dropped for their length on a page, by reason', () => {
      const { task: t } = parseTask(
        `name: t\nstart: [https://example.com/]\nrules:\n  - name: r\n    match: ["**"]\n    follow: [{ selector: a }]\n`,
        't.yaml',
      );
      const html = `<a href="/ok">ok</a><a href="/${'x'.repeat(2100)}">long</a>`;
      const out = analysePage(t!, { facts: urlFacts('https://example.com/'), html, rule: t!.rules[0]!, depth: 0 });
      assert.equal(out.kept.length, 1);
      assert.deepEqual(
        out.dropped.map((d) => d.reason),
        ['too-long'],
      );
    });

    it(`refuses more than ${MAX_START_URLS} start URLs, pointing to the queue for bulk URLs`, () => {
      const urls = Array.from({ length: MAX_START_URLS + 1 }, (_, i) => `  - https://example.com/p${i}`).join('\n');
      const r = parseTask(`name: t\nstart:\n${urls}\nrules:\n  - name: r\n`, 't.yaml');
      assert.equal(r.task, null);
      const all = lines(r);
      assert.equal(all.length, 1, all.slice(0, 3).join('\n'));
      assert.match(
        all[0]!,
        /^t\.yaml:3:3: error: start: 10001 start URLs, more than the 10000 a task file may list; .*crawl-studio enqueue/,
      );
    });

    it(`refuses a file over ${MAX_TASK_FILE_CHARS / 1024 / 1024} MB before parsing it`, () => {
      // Broken YAML after the size limit: parsed, it would add a syntax error; refused unread, the size is all it says.
      const text = `name: t\nstart: [https://example.com/]\nrules:\n  - name: r\n# ${'x'.repeat(MAX_TASK_FILE_CHARS)}\nrules: [ {\n`;
      const r = parseTask(text, 'big.yaml');
      assert.equal(r.task, null);
      assert.equal(lines(r).length, 1, lines(r).join('\n').slice(0, 400));
      assert.match(
        lines(r)[0]!,
        /^big\.yaml:1:1: error: the file is 5\.0 MB, more than the 5 MB a task file may be; .*crawl-studio enqueue/,
      );
    });
  });
});
