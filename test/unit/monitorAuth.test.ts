import { strict as assert } from 'node:assert';
import {
  allowedHosts,
  bindRefusal,
  hostAllowed,
  hostName,
  isLoopback,
  tokenOf,
  tokensEqual,
} from '../../src/monitor/auth';

// The web monitor's gatekeeping (issue 31): which Host headers it answers, where the actions' token is read from,
// and when a bind address needs a given token. The end-to-end checks are in test/integration/monitor.test.ts.

describe('monitor auth', () => {
  it('reads the name of a Host header, with or without a port, IPv6 included', () => {
    assert.equal(hostName('127.0.0.1:5555'), '127.0.0.1');
    assert.equal(hostName('LocalHost'), 'localhost');
    assert.equal(hostName('[::1]:5555'), '::1');
    assert.equal(hostName('example.com.:80'), 'example.com');
    assert.equal(hostName(undefined), null);
    assert.equal(hostName('a b'), null);
    assert.equal(hostName('user@evil:1'), null);
  });

  it('answers its bind address and loopback names only, plus what --allow-host adds', () => {
    const loop = allowedHosts('127.0.0.1', []);
    for (const ok of ['127.0.0.1:5555', 'localhost:5555', '[::1]:5555']) assert.ok(hostAllowed(ok, loop), ok);
    for (const no of ['evil.example:5555', '127.0.0.1.nip.io:5555', '10.0.0.5:5555', '', undefined])
      assert.ok(!hostAllowed(no, loop), String(no));
    const lan = allowedHosts('10.0.0.5', ['monitor.internal']);
    assert.ok(hostAllowed('10.0.0.5:5555', lan));
    assert.ok(hostAllowed('monitor.internal', lan));
    assert.ok(!hostAllowed('localhost:5555', lan), 'bound to a LAN address, not reachable as localhost');
  });

  it('takes the token from Authorization: Bearer or X-Crawl-Studio-Token, nothing else', () => {
    assert.equal(tokenOf({ authorization: 'Bearer abc' }), 'abc');
    assert.equal(tokenOf({ 'x-crawl-studio-token': 'abc' }), 'abc');
    assert.equal(tokenOf({ authorization: 'Basic abc' }), null);
    assert.equal(tokenOf({ cookie: 'token=abc' }), null);
    assert.equal(tokenOf({}), null);
  });

  it('compares tokens whatever their lengths', () => {
    assert.ok(tokensEqual('s3cret', 's3cret'));
    assert.ok(!tokensEqual('s3cre', 's3cret'));
    assert.ok(!tokensEqual('', 's3cret'));
    assert.ok(!tokensEqual('s3cretX', 's3cret'));
  });

  it('refuses a bind beyond loopback without a given token', () => {
    assert.ok(isLoopback('127.0.0.1') && isLoopback('::1') && isLoopback('localhost') && isLoopback('127.1.2.3'));
    assert.ok(!isLoopback('0.0.0.0') && !isLoopback('10.0.0.5') && !isLoopback('::'));
    assert.equal(bindRefusal('127.0.0.1', false), null);
    assert.match(bindRefusal('0.0.0.0', false)!, /--bind 0\.0\.0\.0 is reachable from other machines/);
    assert.equal(bindRefusal('0.0.0.0', true), null);
  });
});
