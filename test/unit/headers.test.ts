import assert from 'node:assert/strict';
import { formatDiagnostic } from '../../src/core/task/diagnostics';
import { parseTask } from '../../src/core/task/parse';
import { FetchFailure } from '../../src/worker/fetcher';
import { expandHeaders, ruleOptions } from '../../src/worker/requests';

// Issue 35, item 6: a CRLF in a header value passed validate (the page was then "skipped (robots)" with no request
// sent), and `headers: { host: … }` overrode the Host header with no check.

const base = `name: t\nstart: [http://shop.test/]\nrules: [{ name: page }]\n`;
const errors = (text: string) =>
  parseTask(text, 't.yaml')
    .diagnostics.filter((d) => d.severity === 'error')
    .map(formatDiagnostic);

describe('request headers a task file may set (issue 35, item 6)', () => {
  it('refuses a CR/LF or another control character in a value, at the file, line and field', () => {
    const crlf = errors(base + `request: { headers: { x-a: "ok\\r\\nInjected: 1" } }\n`);
    assert.equal(crlf.length, 1, crlf.join('\n'));
    assert.match(crlf[0]!, /^t\.yaml:4:\d+: error: request\.headers\.x-a: the value holds a line break \(CR or LF\)/);
    const nul = errors(
      base.replace('rules: [{ name: page }]', 'rules: [{ name: page, request: { headers: { x-b: "a\\u0000b" } } }]'),
    );
    assert.match(nul.join('\n'), /rules\[0\]\.request\.headers\.x-b: the value holds the control character U\+0000/);
    assert.match(
      errors(base + `request: { userAgent: "bot\\nX-Evil: 1" }\n`).join('\n'),
      /request\.userAgent: the value holds a line break/,
    );
    assert.deepEqual(errors(base + `request: { headers: { x-a: "tab\\there" } }\n`), [], 'a tab is allowed');
  });

  it('refuses Host, the framing and hop-by-hop headers and Proxy-Authorization, and names that are not tokens', () => {
    for (const name of [
      'host',
      'Host',
      'content-length',
      'Transfer-Encoding',
      'connection',
      'keep-alive',
      'upgrade',
      'te',
      'trailer',
      'expect',
      'proxy-connection',
      'proxy-authorization',
    ]) {
      const all = errors(base + `request: { headers: { ${name}: x } }\n`);
      assert.equal(all.length, 1, `${name}: ${all.join('\n')}`);
      assert.match(
        all[0]!,
        new RegExp(`^t\\.yaml:4:\\d+: error: request\\.headers\\.${name}: '${name}' cannot be set: `),
      );
    }
    assert.match(
      errors(base + `request: { headers: { host: evil.example } }\n`)[0]!,
      /the Host header comes from the URL/,
    );
    assert.match(
      errors(base + `request: { headers: { "x a": b } }\n`)[0]!,
      /request\.headers\.x a: "x a" is not a header name/,
    );
    assert.deepEqual(
      errors(base + `request: { headers: { accept-language: en, x-api-key: '\${CRAWL_STUDIO_API_KEY}' } }\n`),
      [],
    );
  });

  it("a variable whose value holds a line break is not sent: the rule's pages fail naming the variable, never its value", () => {
    const env = { CRAWL_STUDIO_T: 'ok\r\nInjected: secret-ish' };
    const h = expandHeaders({ 'x-t': '${CRAWL_STUDIO_T}', 'x-ok': 'fine' }, env);
    assert.deepEqual(h.headers, { 'x-ok': 'fine' });
    assert.match(h.invalid[0]!, /header 'x-t': the value of \$\{CRAWL_STUDIO_T\} holds a line break/);
    const task = parseTask(
      base.replace(
        'rules: [{ name: page }]',
        `rules: [{ name: page, request: { headers: { x-t: '\${CRAWL_STUDIO_T}' } } }]`,
      ),
      't.yaml',
    ).task!;
    const o = ruleOptions(task, { headers: {} } as never, env)(task.rules[0]!);
    assert.ok(o instanceof FetchFailure);
    assert.match(o.message, /cannot be sent: header 'x-t': the value of \$\{CRAWL_STUDIO_T\}/);
    assert.ok(!o.message.includes('secret-ish'));
  });
});
