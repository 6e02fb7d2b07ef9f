import { strict as assert } from 'node:assert';
import { parseTask } from '../../src/core/task/parse';
import {
  fieldChanges,
  incompleteReason,
  parseRetention,
  recordSighting,
  type ItemState,
  type Sighting,
} from '../../src/core/history/diff';

// Item history's decisions (issue 33), without a store: what one sighting records.

const sight = (run: string, data: Record<string, unknown>, fetchedAt: number): Sighting => ({
  type: 'p',
  key: 'k',
  json: JSON.stringify(data),
  url: 'https://shop.test/k',
  run,
  fetchedAt,
});

function state(s: Sighting, firstRun = s.run, removedRun: string | null = null): ItemState {
  return {
    type: s.type,
    key: s.key,
    firstRun,
    lastRun: s.run,
    removedRun,
    data: s.json,
    url: s.url,
    fetchedAt: s.fetchedAt,
  };
}

describe('item history: what a sighting records', () => {
  it('a new item is added; the same sighting again records nothing', () => {
    const s = sight('r1', { price: 1 }, 10);
    const first = recordSighting(undefined, s);
    assert.deepEqual(
      first.changes.map((c) => [c.kind, c.newValue]),
      [['added', '{"price":1}']],
    );
    assert.deepEqual(recordSighting(first.state!, s), { state: null, changes: [] });
  });

  it('an older fetch never rewrites a newer one (a replay delivered late)', () => {
    const newer = state(sight('r2', { price: 2 }, 20), 'r1');
    assert.deepEqual(recordSighting(newer, sight('r2', { price: 1 }, 15)), { state: null, changes: [] });
  });

  it('a field change records old and new; a field lost records its old value', () => {
    const out = recordSighting(state(sight('r1', { price: 1, stock: 'yes' }, 10)), sight('r2', { price: 2 }, 20));
    assert.deepEqual(
      out.changes.map((c) => [c.kind, c.field, c.oldValue, c.newValue]),
      [
        ['changed', 'price', '1', '2'],
        ['changed', 'stock', '"yes"', null],
      ],
    );
    assert.equal(out.state!.firstRun, 'r1');
    assert.equal(out.state!.lastRun, 'r2');
  });

  it('an item added in this run and seen again with other values stays one added row, with the newest value', () => {
    const out = recordSighting(state(sight('r1', { price: 1 }, 10)), sight('r1', { price: 3 }, 11));
    assert.deepEqual(
      out.changes.map((c) => [c.kind, c.newValue]),
      [['added', '{"price":3}']],
    );
  });

  it('a removed item that comes back is added again, keeping its first run', () => {
    const out = recordSighting(state(sight('r1', { price: 1 }, 10), 'r0', 'r2'), sight('r3', { price: 1 }, 30));
    assert.deepEqual(
      out.changes.map((c) => c.kind),
      ['added'],
    );
    assert.equal(out.state!.firstRun, 'r0');
    assert.equal(out.state!.removedRun, null);
  });

  it('values compare as JSON: 12 and "12" differ, equal arrays do not', () => {
    assert.deepEqual(
      fieldChanges({ a: 12, b: [1, 2] }, { a: '12', b: [1, 2] }).map((c) => c.field),
      ['a'],
    );
  });

  it("objects compare whatever their keys' order (PostgreSQL's jsonb reorders them); arrays keep theirs", () => {
    assert.deepEqual(
      fieldChanges(
        { size: { w: 1, h: 2 }, tags: ['a', 'b'], n: { a: 1 } },
        { size: { h: 2, w: 1 }, tags: ['b', 'a'], n: { a: 2 } },
      ).map((c) => c.field),
      ['tags', 'n'],
    );
  });

  it('a run with failed pages or cut by the page limit is not complete; retention reads runs or days', () => {
    assert.equal(incompleteReason({ failed: 0, skipped: {} }), null);
    assert.match(incompleteReason({ failed: 2, skipped: {} })!, /2 pages failed/);
    assert.equal(incompleteReason({ failed: 1, skipped: {} }), '1 page failed');
    assert.match(incompleteReason({ failed: 0, skipped: { limit: 5 } })!, /page limit/);
    assert.deepEqual(parseRetention(30), { runs: 30 });
    assert.deepEqual(parseRetention('30 runs'), { runs: 30 });
    assert.deepEqual(parseRetention('90d'), { ms: 90 * 86_400_000 });
  });

  it('store.history.keep: a bad value is an error at its line; a good one is read', () => {
    const task = (keep: string) =>
      `name: t\nstart: [https://shop.test/]\nstore:\n  history: { keep: ${keep} }\nrules:\n  - name: r\n`;
    const bad = parseTask(task('soon'), 't.crawl.yaml');
    assert.equal(bad.task, null);
    const d = bad.diagnostics.find((x) => /number of runs/.test(x.message));
    assert.ok(d, JSON.stringify(bad.diagnostics));
    assert.equal(d.line, 4);
    assert.deepEqual(parseTask(task('90d'), 't.crawl.yaml').task?.store.history, { ms: 90 * 86_400_000 });
    assert.deepEqual(parseTask(task('12'), 't.crawl.yaml').task?.store.history, { runs: 12 });
  });
});
