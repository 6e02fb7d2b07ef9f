import { strict as assert } from 'node:assert';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

// Issue 34: a task's partitions are reached one way (src/frontier/partitions.ts) and Lua lives in
// src/frontier/lua/ behind src/frontier/scripts.ts. Before, six modules built their own BullMQ queues (two looked at
// the first partition only, so the editor missed jobs on a Redis Cluster), nine read the layout from the meta hash,
// and two wrote their Lua inline. Checked on src/, and on a small tree with one violation of each rule, so a rule that
// can no longer fail is seen.

const root = join(__dirname, '..', '..', '..');

interface Rule {
  readonly what: string;
  readonly pattern: RegExp;
  /** The only files (relative to src/) where the pattern may appear. */
  readonly only: readonly string[];
}

const RULES: readonly Rule[] = [
  { what: "a BullMQ Queue of a task's partition", pattern: /\bnew Queue\b/, only: ['frontier/partitions.ts'] },
  {
    what: "the layout read from a task's meta hash",
    pattern: /\b(LAYOUT_FIELD|layoutFromMeta)\b/,
    only: ['frontier/layout.ts', 'frontier/partitions.ts', 'frontier/crawl.ts'],
  },
  {
    what: 'a Lua script defined or sent inline',
    pattern: /\.(defineCommand|eval|evalsha)\(/,
    only: ['frontier/scripts.ts'],
  },
];

function violations(files: ReadonlyMap<string, string>): string[] {
  const out: string[] = [];
  for (const [file, text] of files) {
    text.split('\n').forEach((line, i) => {
      for (const r of RULES)
        if (r.pattern.test(line) && !r.only.includes(file))
          out.push(`src/${file}:${i + 1}: ${r.what} outside ${r.only.join(', ')}`);
    });
  }
  return out;
}

function sources(dir: string, out = new Map<string, string>()): Map<string, string> {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) sources(path, out);
    else if (name.endsWith('.ts')) out.set(relative(join(root, 'src'), path), readFileSync(path, 'utf8'));
  }
  return out;
}

describe("one way to a task's partitions and to Lua (issue 34)", () => {
  it('src/ builds queues, reads the layout and defines scripts only where the map says', () => {
    assert.deepEqual(violations(sources(join(root, 'src'))), []);
  });

  it('each rule fails on a deliberate violation', () => {
    const tree = new Map([
      [
        'extension/results/jobs.ts',
        'const q = new Queue<PageJobData>(task, { connection: redis, prefix: bullPrefix(task) });',
      ],
      ['observe/findUrl.ts', 'const layout = layoutFromMeta(task.name, meta[LAYOUT_FIELD]);'],
      ['worker/sessions.ts', 'await this.redis.eval(RETIRE, 1, key, id);'],
      ['frontier/partitions.ts', 'const queue = new Queue(task, { connection });'],
    ]);
    assert.deepEqual(violations(tree), [
      "src/extension/results/jobs.ts:1: a BullMQ Queue of a task's partition outside frontier/partitions.ts",
      "src/observe/findUrl.ts:1: the layout read from a task's meta hash outside frontier/layout.ts, frontier/partitions.ts, frontier/crawl.ts",
      'src/worker/sessions.ts:1: a Lua script defined or sent inline outside frontier/scripts.ts',
    ]);
  });
});
