import { strict as assert } from 'node:assert';
import { conditionHolds, notifiable, numberOf } from '../../src/core/history/notify';
import { parseTask } from '../../src/core/task/parse';
import { variableProblem } from '../../src/core/task/variables';

// Notifications' pure parts (issue 33): the webhook variable's own rule, and the conditions.

describe('notify: conditions and the webhook variable', () => {
  const price = (old: unknown, now: unknown) => ({
    type: 'product',
    key: 'a',
    kind: 'changed' as const,
    field: 'price',
    old,
    new: now,
  });

  it('a numeric field moved by more than N percent, either way, from numbers or from text', () => {
    const moved = { kind: 'moved' as const, type: 'product', field: 'price', percent: 10 };
    assert.equal(conditionHolds(moved, price('10.00', '12.00')), true);
    assert.equal(conditionHolds(moved, price(100, 91)), false);
    assert.equal(conditionHolds(moved, price('$1,000', '$800')), true);
    assert.equal(conditionHolds(moved, price('n/a', '12')), false);
    assert.equal(numberOf('€ 1,299.50'), 1299.5);
  });

  it('changed: a field of a type, or any change of the type; no condition: any change', () => {
    const changes = [price(1, 2), { type: 'product', key: 'b', kind: 'added' as const, field: null }];
    assert.equal(
      notifiable(
        { webhook: '${CRAWL_STUDIO_WEBHOOK_URL}', when: [{ kind: 'changed', type: 'product', field: 'stock' }] },
        changes,
      ).length,
      0,
    );
    assert.equal(
      notifiable(
        { webhook: '${CRAWL_STUDIO_WEBHOOK_URL}', when: [{ kind: 'changed', type: 'product', field: null }] },
        changes,
      ).length,
      2,
    );
    assert.equal(notifiable({ webhook: '${CRAWL_STUDIO_WEBHOOK_URL}', when: [] }, changes).length, 2);
  });

  it('a webhook variable goes only to the webhook, and the webhook takes nothing else', () => {
    assert.equal(variableProblem('CRAWL_STUDIO_WEBHOOK_URL', 'webhook'), null);
    assert.match(variableProblem('CRAWL_STUDIO_WEBHOOK_URL', 'request')!, /only in notify\.webhook/);
    assert.match(variableProblem('CRAWL_STUDIO_TOKEN', 'webhook')!, /only a variable named CRAWL_STUDIO_WEBHOOK/);
    assert.match(variableProblem('CRAWL_STUDIO_REDIS', 'webhook')!, /own settings/);
  });

  it('a task file whose webhook is a literal URL or another variable is refused at notify.webhook', () => {
    const task = (webhook: string) =>
      `name: t\nstart: [https://shop.test/]\nnotify: { webhook: "${webhook}" }\nrules:\n  - name: r\n`;
    for (const [webhook, message] of [
      ['https://hooks.test/x', /is not one variable/],
      ['${CRAWL_STUDIO_TOKEN}', /only a variable named CRAWL_STUDIO_WEBHOOK/],
    ] as const) {
      const { task: t, diagnostics } = parseTask(task(webhook), 't.crawl.yaml');
      assert.equal(t, null);
      const d = diagnostics.find((x) => message.test(x.message));
      assert.ok(d, JSON.stringify(diagnostics));
      assert.equal(d.line, 3);
    }
    const { task: ok, diagnostics } = parseTask(task('${CRAWL_STUDIO_WEBHOOK_URL}'), 't.crawl.yaml');
    assert.equal(ok?.notify?.webhook, '${CRAWL_STUDIO_WEBHOOK_URL}', JSON.stringify(diagnostics));
  });
});
