import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { schemaReference } from '../../src/core/task/schemaDoc';

// The reference in docs/ is generated from the schema; a stale copy fails here (regenerate: npm run docs).

describe('task file reference', () => {
  it('documents every top-level field of the schema', () => {
    const doc = schemaReference();
    for (const k of ['name', 'start', 'scope', 'request', 'politeness', 'canonical', 'store', 'schedule', 'rules'])
      assert.match(doc, new RegExp(`\\| \`${k}\` \\|`));
    for (const k of ['selector', 'attr', 'regex', 'all', 'key', 'scope', 'maxPages', 'onConflict', 'cron'])
      assert.match(doc, new RegExp(`\\| \`${k}\` \\|`), k);
  });
  it('is committed up to date in docs/task-file.md', () => {
    assert.equal(
      readFileSync('docs/task-file.md', 'utf8'),
      schemaReference(),
      'docs/task-file.md is stale: run npm run docs',
    );
  });
});
