import { strict as assert } from 'node:assert';
import { parseTask } from '../../src/core/task/parse';
import { taskFingerprint } from '../../src/core/task/fingerprint';
import { taskDiffers } from '../../src/worker/activityLog';

// A task's digest (core/task/fingerprint.ts) tells a worker its copy is not the one its run runs with: equal for the
// same task wherever its file is and however it is laid out, different as soon as what a worker does changes.

const YAML = `name: books
start: [https://shop.test/]
rules:
  - name: book
    match: ["**/book/*"]
    items:
      - type: book
        key: [upc]
        fields:
          upc: td.upc
          title: h1
`;

function digest(text: string, file = '/a/books.crawl.yaml', env: Record<string, string> = {}): string {
  const { task, diagnostics } = parseTask(text, file, { env });
  assert.ok(task, JSON.stringify(diagnostics));
  return taskFingerprint(task);
}

describe("a task's fingerprint", () => {
  it('is the same for the same task at another path, with comments, spacing or key order changed', () => {
    const base = digest(YAML);
    assert.match(base, /^[0-9a-f]{16}$/);
    assert.equal(digest(YAML, '/elsewhere/on/another/machine.crawl.yaml'), base);
    assert.equal(
      digest(`# the shop\n${YAML.replace('start: [https://shop.test/]', 'start:\n  - https://shop.test/')}`),
      base,
    );
    // Keys of a mapping in another order (a list's order, as the fields', is part of the task: columns).
    assert.equal(
      digest(YAML.replace('  - name: book\n    match: ["**/book/*"]', '  - match: ["**/book/*"]\n    name: book')),
      base,
    );
  });

  it('differs when a selector, a pattern or a setting does', () => {
    const base = digest(YAML);
    assert.notEqual(digest(YAML.replace('title: h1', 'title: h2')), base);
    assert.notEqual(digest(YAML.replace('**/book/*', '**/books/*')), base);
    assert.notEqual(digest(`${YAML}politeness: { perHost: { concurrency: 2 } }\n`), base);
  });

  it("leaves the store out: its URL may hold a password once filled in, and it is the driver's", () => {
    const store = 'store: { url: "postgres://u:${PGPASSWORD}@127.0.0.1:5432/db" }\n';
    assert.equal(
      digest(YAML + store, undefined, { PGPASSWORD: 'one' }),
      digest(YAML + store, undefined, { PGPASSWORD: 'two' }),
    );
  });

  it('makes a warning only for a running run that records another digest', () => {
    const run = (taskFingerprint: string | null, state: 'running' | 'finished' = 'running') => ({
      run: 'r1',
      state,
      taskFingerprint,
    });
    assert.equal(taskDiffers('books', '/a/b.crawl.yaml', 'aaaa', run('aaaa')), null);
    assert.equal(taskDiffers('books', '/a/b.crawl.yaml', 'aaaa', run(null)), null, 'a run of an older version');
    assert.equal(taskDiffers('books', '/a/b.crawl.yaml', 'aaaa', run('bbbb', 'finished')), null);
    assert.equal(taskDiffers('books', '/a/b.crawl.yaml', 'aaaa', null), null);
    assert.equal(
      taskDiffers('books', '/a/b.crawl.yaml', 'aaaa', run('bbbb')),
      "books: this worker's task file (/a/b.crawl.yaml) differs from the one run r1 runs with (its rules, selectors or settings are not the same): the pages it takes are fetched and extracted by its copy. Give every worker the same file, then restart this one.",
    );
  });
});
