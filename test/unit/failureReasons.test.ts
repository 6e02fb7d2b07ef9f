import { strict as assert } from 'node:assert';
import { matchesReason } from '../../src/observe/failures';

// `failures --reason R` and `retry --reason R` (issue 31): R takes what the user named and nothing more. The real
// CLI's run of a 404 and a 500 is in test/integration/cliFailures.test.ts.

describe('--reason R: which failure groups it takes', () => {
  const groups = [
    'http-404',
    'http-500',
    'http-503',
    'proxy-auth',
    'login',
    'timeout',
    'too-large',
    'render-timeout',
    'dns',
  ];
  const taken = (reason: string | undefined) => groups.filter((g) => matchesReason(g, reason));

  it('no reason: every group', () => assert.deepEqual(taken(undefined), groups));

  it('an exact group: that group only', () => {
    assert.deepEqual(taken('http-404'), ['http-404']);
    assert.deepEqual(taken('proxy-auth'), ['proxy-auth']);
    assert.deepEqual(taken('timeout'), ['timeout'], 'not render-timeout');
  });

  it('`http`: every HTTP status, not a proxy refusing its credentials, a failed login or a timeout', () => {
    assert.deepEqual(taken('http'), ['http-404', 'http-500', 'http-503']);
  });

  it('a status class: http-4xx, http-5xx', () => {
    assert.deepEqual(taken('http-4xx'), ['http-404']);
    assert.deepEqual(taken('http-5xx'), ['http-500', 'http-503']);
  });

  it('no other prefix: `proxy` is not proxy-auth, `too` not too-large, `render` not render-timeout', () => {
    for (const r of ['proxy', 'too', 'render', 'http-', 'http-5', 'HTTP']) assert.deepEqual(taken(r), [], r);
  });
});
