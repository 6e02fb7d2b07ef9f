import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { formatDiagnostic } from '../../src/core/task/diagnostics';
import { parseTask } from '../../src/core/task/parse';

// The extension manifest (issue 23, VS Code conventions): its user-facing strings come from package.nls.json, and
// its $crawl-studio problem matcher reads what `crawl-studio validate / run / test` print.

const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as Record<string, any>;
const nls = JSON.parse(readFileSync('package.nls.json', 'utf8')) as Record<string, string>;

/** Every string under the manifest's user-facing keys, with where it is. */
function shown(): [string, string][] {
  const out: [string, string][] = [];
  const keys = new Set([
    'title',
    'description',
    'markdownDescription',
    'name',
    'contents',
    'displayName',
    'label',
    'category',
  ]);
  const walk = (v: unknown, path: string) => {
    if (Array.isArray(v)) v.forEach((x, i) => walk(x, `${path}[${i}]`));
    else if (v && typeof v === 'object') {
      for (const [k, x] of Object.entries(v)) {
        // A view's `name` and a command's `title` are shown; a problem matcher's `name` is an id.
        if (typeof x === 'string' && keys.has(k) && !(k === 'name' && path.includes('problemMatchers')))
          out.push([`${path}.${k}`, x]);
        else walk(x, `${path}.${k}`);
      }
    }
  };
  walk({ displayName: pkg.displayName, description: pkg.description }, '');
  walk(pkg.contributes, 'contributes');
  walk(pkg.capabilities, 'capabilities');
  return out;
}

describe('extension manifest', () => {
  it('takes every user-facing string from package.nls.json, and every entry there is used', () => {
    const literal = shown().filter(([, v]) => !/^%[\w.-]+%$/.test(v));
    assert.deepEqual(literal, [], 'strings written in package.json');
    const used = new Set(shown().map(([, v]) => v.slice(1, -1)));
    assert.deepEqual(
      [...used].filter((k) => !(k in nls)),
      [],
      'keys missing from package.nls.json',
    );
    assert.deepEqual(
      Object.keys(nls).filter((k) => !used.has(k)),
      [],
      'entries nothing uses',
    );
    // Walkthrough and welcome texts render links and nothing else of markdown: a backtick shows as one.
    assert.deepEqual(
      Object.entries(nls)
        .filter(([k, v]) => /^(walkthrough|viewsWelcome)\./.test(k) && v.includes('`'))
        .map(([k]) => k),
      [],
    );
  });

  it("has a problem matcher that reads the CLI's problem lines", () => {
    const matcher = (
      pkg.contributes.problemMatchers as {
        name: string;
        pattern: { regexp: string; file: number; line: number; column: number; severity: number; message: number };
      }[]
    ).find((m) => m.name === 'crawl-studio')!;
    const re = new RegExp(matcher.pattern.regexp);
    const { diagnostics } = parseTask(
      'name: Bad Name\nstart: [https://example.com/]\nrules:\n  - name: r\n    follow:\n      - { selector: "a[", to: r }\n',
      'tasks/shop.crawl.yaml',
    );
    const lines = diagnostics.map(formatDiagnostic);
    assert.equal(lines.length, 2);
    for (const [line, d] of lines.map((l, i) => [l, diagnostics[i]!] as const)) {
      const m = re.exec(line);
      assert.ok(m, line);
      assert.equal(m[matcher.pattern.file], 'tasks/shop.crawl.yaml');
      assert.equal(Number(m[matcher.pattern.line]), d.line);
      assert.equal(Number(m[matcher.pattern.column]), d.column);
      assert.equal(m[matcher.pattern.severity], 'error');
      assert.ok(m[matcher.pattern.message]!.endsWith(d.message));
    }
    assert.equal(re.exec('tasks/shop.crawl.yaml: 2 errors'), null, 'the summary line is no problem');
  });
});

describe('the manifest: settings', () => {
  // VS Code nests settings by their dots: a setting whose key continues another's (`crawlStudio.workers` and
  // `crawlStudio.workers.autoscale`) is dropped whenever the other has a value ("Ignoring crawlStudio.workers.autoscale
  // as crawlStudio.workers is 3"), and turns the other into an object when it has none.
  it('no setting key is another setting key followed by a dot', () => {
    const keys = Object.keys((pkg.contributes.configuration as { properties: Record<string, unknown> }).properties);
    const nested = keys.flatMap((a) => keys.filter((b) => b.startsWith(`${a}.`)).map((b) => `${b} under ${a}`));
    assert.deepEqual(nested, []);
  });
});
