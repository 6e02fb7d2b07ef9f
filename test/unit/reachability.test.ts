import assert from 'node:assert/strict';
import { parseTask } from '../../src/core/task/parse';

// `validate` (and the editor, which shows the same diagnostics) warns about task files that parse but cannot crawl
// what they describe (issue 21, item 2): each case here was a one-page crawl that exited 0 and validated "ok".

const warnings = (yaml: string) =>
  parseTask(yaml, 'w.crawl.yaml')
    .diagnostics.filter((d) => d.severity === 'warning')
    .map((d) => `${d.line}:${d.path}: ${d.message}`);

describe('task files: reachability warnings', () => {
  it('a scope.allow that no start URL passes, at scope.allow', () => {
    const w = warnings(
      `name: t\nstart: [http://127.0.0.1:8080/]\nscope:\n  allow: ["/catalogue/**"]\nrules:\n  - name: a\n    follow: [{ selector: a, to: a }]\n`,
    );
    assert.deepEqual(w.length, 1, w.join('\n'));
    assert.match(w[0]!, /^4:scope\.allow: no pattern here matches a start URL \(http:\/\/127\.0\.0\.1:8080\/\)/);
  });

  it('a follow without to when no rule has match, at the follow', () => {
    const w = warnings(`name: t\nstart: [http://h/]\nrules:\n  - name: list\n    follow:\n      - selector: li a\n`);
    assert.ok(
      w.some((x) => /^6:rules\[0\]\.follow\[0\]: this follow has no 'to' and no rule has 'match'/.test(x)),
      w.join('\n'),
    );
  });

  it('a rule nothing routes to, at its name, also through follows of rules reached', () => {
    const w = warnings(`name: t
start: [http://h/]
rules:
  - name: list
    follow: [{ selector: a.book, to: book }]
  - name: book
  - name: author
    match: ["/author/*"]
  - name: orphan
`);
    assert.deepEqual(w, [
      `7:rules[2].name: rule 'author' can never be reached: its 'match' ('/author/*') is used only for links of a follow without 'to', and no rule reached from the start pages has one (\`crawl-studio enqueue --rule author\` can still send pages to it)`,
      `9:rules[3].name: rule 'orphan' can never be reached: no start URL, sitemap or follow 'to' names it, and it has no 'match' (\`crawl-studio enqueue --rule orphan\` can still send pages to it)`,
    ]);
  });

  it('a match pattern for a host the scope never reaches, with the path to write', () => {
    const w = warnings(
      `name: t\nstart: [http://127.0.0.1:8080/]\nrules:\n  - name: list\n    follow: [{ selector: a }]\n  - name: author\n    match: ["https://quotes.toscrape.com/author/*"]\n`,
    );
    assert.ok(
      w.some((x) =>
        /^7:rules\[1\]\.match\[0\]: .*host quotes\.toscrape\.com, which is not a start host .*write a path: '\/author\/\*'/.test(
          x,
        ),
      ),
      w.join('\n'),
    );
  });

  it("the issue's task, written the obvious way, is quiet and routes authors by path", () => {
    const { task, diagnostics } = parseTask(
      `name: quotes
start: [http://127.0.0.1:8080/]
rules:
  - name: list
    match: ["/", "/page/*/"]
    follow:
      - selector: li.next a
      - selector: a.author
  - name: author
    match: ["/author/*"]
`,
      'q.crawl.yaml',
    );
    assert.deepEqual(diagnostics, []);
    const route = (u: string) => task!.rules.find((r) => r.match.some((p) => p.regex.test(u)))?.name;
    assert.equal(route('http://127.0.0.1:8080/page/2/'), 'list');
    assert.equal(route('http://127.0.0.1:8080/author/Albert-Einstein'), 'author');
  });
});
