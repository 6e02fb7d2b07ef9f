import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { parseTask } from '../../src/core/task/parse';
import { formatDiagnostic } from '../../src/core/task/diagnostics';

const minimal = `name: t1
start: [https://example.com/]
rules:
  - name: page
`;

describe('task file parsing', () => {
  it('accepts the shipped example and applies defaults', () => {
    const { task, diagnostics } = parseTask(readFileSync('examples/books.crawl.yaml', 'utf8'), 'books.crawl.yaml');
    assert.deepEqual(diagnostics, []);
    assert.ok(task);
    assert.equal(task.name, 'books');
    assert.equal(task.start[0]!.rule, 'list');
    assert.equal(task.request.timeoutMs, 10_000);
    assert.equal(task.request.retries.delayMs, 500);
    assert.equal(task.request.robots, true);
    assert.equal(task.rules[1]!.items[0]!.fields.find((f) => f.name === 'tags')!.all, true);
    assert.deepEqual(task.scope.startHosts, ['127.0.0.1:8737']);
  });

  it('reports schema and semantic mistakes together, each with line, column and field', () => {
    const text = `name: Bad Name
start:
  - https://example.com/
rules:
  - name: list
    follow:
      - selector: ".a["
        to: detial
  - name: detail
    items:
      - type: thing
        fields:
          title: h1
        key: [titel]
`;
    const { task, diagnostics } = parseTask(text, 'bad.crawl.yaml');
    assert.equal(task, null);
    const lines = diagnostics.map(formatDiagnostic);
    assert.equal(diagnostics.length, 4, lines.join('\n'));
    assert.match(lines[0]!, /^bad\.crawl\.yaml:1:7: error: name: 'Bad Name' must be 1-64 lowercase/);
    assert.match(
      lines[1]!,
      /^bad\.crawl\.yaml:7:19: error: rules\[0\]\.follow\[0\]\.selector: '\.a\[' is not a valid CSS selector/,
    );
    assert.match(lines[2]!, /^bad\.crawl\.yaml:8:13: error: rules\[0\]\.follow\[0\]\.to: no rule named 'detial'/);
    assert.match(lines[3]!, /^bad\.crawl\.yaml:14:15: error: rules\[1\]\.items\[0\]\.key\[0\]: 'titel' is not a field/);
  });

  it('reports every semantic mistake of a well-shaped file at its own position', () => {
    const text = `name: ok
start:
  - https://example.com/
rules:
  - name: list
    follow:
      - selector: ".a["
        to: detial
  - name: detail
    items:
      - type: thing
        fields:
          title: h1
        key: [titel]
`;
    const { diagnostics } = parseTask(text, 'f.crawl.yaml');
    const lines = diagnostics.map(formatDiagnostic);
    assert.equal(diagnostics.length, 3, lines.join('\n'));
    assert.match(
      lines[0]!,
      /^f\.crawl\.yaml:7:19: error: rules\[0\]\.follow\[0\]\.selector: '\.a\[' is not a valid CSS selector/,
    );
    assert.match(
      lines[1]!,
      /^f\.crawl\.yaml:8:13: error: rules\[0\]\.follow\[0\]\.to: no rule named 'detial'; did you mean 'detail'\?/,
    );
    assert.match(
      lines[2]!,
      /^f\.crawl\.yaml:14:15: error: rules\[1\]\.items\[0\]\.key\[0\]: 'titel' is not a field of this item; did you mean 'title'\?/,
    );
  });

  it('names unknown fields at the key and suggests the right one', () => {
    const { diagnostics } = parseTask(minimal + 'politness: {}\n', 'f.yaml');
    assert.equal(diagnostics.length, 1);
    assert.equal(diagnostics[0]!.path, 'politness');
    assert.equal(diagnostics[0]!.line, 5);
    assert.equal(diagnostics[0]!.column, 1);
    assert.match(diagnostics[0]!.message, /unknown field 'politness'; did you mean 'politeness'\?/);
  });

  it('explains wrong types and missing fields in plain words', () => {
    const { diagnostics } = parseTask(`name: x\nstart: https://a.com/\nrules:\n  - follow: []\n`, 'f.yaml');
    const msgs = diagnostics.map((d) => `${d.path}: ${d.message}`);
    assert.ok(msgs.includes(`start: must be a list, not 'https://a.com/'`), msgs.join('\n'));
    assert.ok(msgs.includes(`rules[0]: missing required field 'name'`), msgs.join('\n'));
  });

  it('checks durations, sizes, regexes and start URLs', () => {
    const text = `name: x
start: [ftp://a.com/, "not a url"]
request: { timeout: 10 parsecs, maxBytes: 5 MB }
rules:
  - name: r
    items:
      - type: t
        fields:
          a: { selector: p, regex: "([a-z" }
`;
    const { diagnostics } = parseTask(text, 'f.yaml');
    const msgs = diagnostics.map((d) => `${d.line}:${d.path}: ${d.message}`);
    assert.ok(
      msgs.some((m) => m.startsWith('3:request.timeout:') && m.includes('must be a duration')),
      msgs.join('\n'),
    );
    assert.ok(!msgs.some((m) => m.includes('maxBytes')), '5 MB is a valid size');
  });

  it('reports YAML syntax errors with positions, not a crash', () => {
    const { task, diagnostics } = parseTask('name: x\nstart: [a, b\nrules: {', 'f.yaml');
    assert.equal(task, null);
    assert.ok(diagnostics.length >= 1);
    assert.ok(diagnostics.every((d) => d.line >= 1 && d.column >= 1));
  });

  it('refuses alias bombs with an error instead of expanding them', () => {
    const bomb = ['a: &a ["x","x","x","x","x","x","x","x","x"]'];
    for (let i = 1; i < 10; i++)
      bomb.push(
        `${String.fromCharCode(97 + i)}: &${String.fromCharCode(97 + i)} [${Array(9)
          .fill('*' + String.fromCharCode(96 + i))
          .join(',')}]`,
      );
    const { task, diagnostics } = parseTask(bomb.join('\n') + '\n', 'bomb.yaml');
    assert.equal(task, null);
    assert.match(diagnostics.map((d) => d.message).join('\n'), /alias/i);
  });

  it('reports an empty file', () => {
    const { diagnostics } = parseTask('', 'empty.yaml');
    assert.match(diagnostics[0]!.message, /empty/);
  });

  // Issue 23, item 10: a missing `}` gave three errors on the next line, two of them the parser's follow-on noise.
  it('reports a YAML syntax error once, where it is, without the follow-on noise', () => {
    const text = readFileSync('examples/books.crawl.yaml', 'utf8');
    const at = text.indexOf('}', text.indexOf('fields:'));
    assert.ok(at > 0);
    const broken = text.slice(0, at) + text.slice(at + 1);
    const { task, diagnostics } = parseTask(broken, 'books.crawl.yaml');
    assert.equal(task, null);
    assert.equal(diagnostics.length, 1, diagnostics.map(formatDiagnostic).join('\n'));
    assert.match(diagnostics[0]!.message, /end with a \}/);
    // Independent mistakes are all still reported: here two keys given twice.
    const dup = parseTask(`${minimal}name: t2\nstart: [https://example.org/]\n`, 'd.crawl.yaml').diagnostics;
    assert.equal(dup.filter((d) => /unique/i.test(d.message)).length, 2, dup.map(formatDiagnostic).join('\n'));
  });

  it('finds duplicate rule names', () => {
    const { diagnostics } = parseTask(minimal + '  - name: page\n', 'f.yaml');
    assert.match(diagnostics[0]!.message, /defined twice/);
    assert.equal(diagnostics[0]!.line, 5);
  });
});
