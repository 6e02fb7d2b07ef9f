import assert from 'node:assert/strict';
import { MAX_DURATION_MS, parseTask } from '../../../src/core/task/parse';
import { MAX_YAML_DEPTH } from '../../../src/core/task/yamlDocument';

// Found by the task-file fuzzer (test/fuzz): values the validator accepted but the engine could not use, and
// messages that repeated a huge value back in full.

const base = (extra: string) =>
  `name: t\nstart: [http://example.com/]\n${extra}\nrules:\n  - name: a\n    follow: [{ selector: a, to: a }]\n`;

describe('fuzz regressions: task-file limits', () => {
  it('refuses a duration no timer can wait for, with the field and the limit (timeout: 5000h used to make every fetch throw)', () => {
    for (const [field, yaml] of [
      ['request.timeout', 'request: { timeout: 5000h }'],
      ['request.retries.delay', 'request: { retries: { delay: 99999999999h } }'],
      ['politeness.perHost.delay', 'politeness: { perHost: { delay: 1000000000000000 } }'],
      ['politeness.rateLimit.per', 'politeness: { rateLimit: { max: 1, per: 30d } }'],
      ['store.flushInterval', 'store: { flushInterval: 1e30 }'],
    ] as const) {
      const { task, diagnostics } = parseTask(base(yaml), 't.crawl.yaml');
      assert.equal(task, null, field);
      const d = diagnostics.find((x) => x.path === field);
      if (field === 'politeness.rateLimit.per') {
        // '30d' is not a duration at all: the schema says so.
        assert.ok(
          diagnostics.some((x) => x.path === field),
          field,
        );
        continue;
      }
      assert.ok(d, `${field}: ${diagnostics.map((x) => `${x.path}: ${x.message}`).join('; ')}`);
      assert.match(d.message, /too long: a duration can be at most 24 days/);
    }
  });

  it('accepts the longest duration a timer can wait', () => {
    const { task, diagnostics } = parseTask(base(`request: { timeout: ${MAX_DURATION_MS} }`), 't.crawl.yaml');
    assert.deepEqual(diagnostics, []);
    assert.equal(task!.request.timeoutMs, MAX_DURATION_MS);
    AbortSignal.timeout(task!.request.timeoutMs);
  });

  it('cuts long values in messages (a 60 KB selector used to be repeated in full)', () => {
    const long = ':is('.repeat(15_000) + 'a';
    const cases = [
      `name: t\nstart: [http://example.com/]\nrules: [{ name: a, follow: [{ selector: "${long}" }] }]`,
      `name: t\nstart: [http://example.com/]\nrules: [{ name: a, follow: [{ selector: a, to: "${'x'.repeat(50_000)}" }] }]`,
      `name: t\nstart: ["${'y'.repeat(50_000)}"]\nrules: [{ name: a }]`,
      `name: t\nstart: [http://example.com/]\nscope: { allow: ["/${'('.repeat(20_000)}/"] }\nrules: [{ name: a }]`,
      `name: t\nstart: [http://example.com/]\nrules: [${Array.from({ length: 5000 }, (_, i) => `{ name: r${i}, follow: [{ selector: a, to: zzzz${i} }] }`).join(', ')}]`,
    ];
    for (const text of cases) {
      const { task, diagnostics } = parseTask(text, 't.crawl.yaml');
      assert.equal(task, null);
      assert.ok(diagnostics.length > 0);
      for (const d of diagnostics)
        assert.ok(d.message.length <= 600, `${d.path}: ${d.message.length} chars: ${d.message.slice(0, 100)}`);
    }
  });

  it('reports an unset environment variable once, however often the store URL repeats it', () => {
    const { diagnostics } = parseTask(base(`store: { url: "${'${CS_FUZZ_UNSET_VAR}'.repeat(1000)}" }`), 't.crawl.yaml');
    assert.equal(diagnostics.filter((d) => d.message.includes('CS_FUZZ_UNSET_VAR')).length, 1);
  });
});

describe('fuzz regressions: deep nesting', () => {
  // Seed 20261129, case 775: 20 KB of `[` overflowed the YAML composer's recursion; the library reported the
  // overflow at whatever offset the stack ran out, so two parses of one text disagreed.
  const deep = (n: number) => `name: x\nstart: ${'['.repeat(n)}${']'.repeat(n)}\nrules: []\n`;

  it('refuses a file nested deeper than the limit, at the first collection past it, the same way every time', () => {
    for (const n of [MAX_YAML_DEPTH, 20_000]) {
      const first = parseTask(deep(n), 'deep.crawl.yaml');
      const again = parseTask(deep(n), 'deep.crawl.yaml');
      assert.equal(first.task, null);
      assert.deepEqual(again.diagnostics, first.diagnostics);
      const d = first.diagnostics[0]!;
      assert.match(d.message, /nests collections more than 64 levels deep/);
      assert.equal(d.line, 2);
      // `start:` is a map value at depth 1, so the first flow sequence past the limit opens at column 7 + 64.
      assert.equal(d.column, 7 + MAX_YAML_DEPTH);
    }
  });

  it('still parses a file nested just within the limit, and block nesting counts like flow nesting', () => {
    const within = parseTask(deep(MAX_YAML_DEPTH - 1), 'deep.crawl.yaml');
    assert.ok(
      !within.diagnostics.some((d) => /levels deep/.test(d.message)),
      within.diagnostics.map((d) => d.message).join('; '),
    );
    const block = `name: x\nstart: [http://example.com/]\nrules: []\nx:\n${Array.from({ length: 70 }, (_, i) => `${' '.repeat(i + 1)}k${i}:`).join('\n')} 1\n`;
    const r = parseTask(block, 'deep.crawl.yaml');
    assert.match(r.diagnostics[0]!.message, /levels deep/);
    assert.equal(r.diagnostics[0]!.line, 4 + 64);
  });
});
