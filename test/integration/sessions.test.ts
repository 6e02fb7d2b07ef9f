import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { FetchFailure } from '../../src/worker/fetcher';
import { SessionPool, type SessionRef } from '../../src/worker/sessions';
import { startRedis, type RedisServer } from '../support/services';

// The session pool on a real redis-server: RFC 6265 decisions are tough-cookie's, kept cookie by cookie so two
// workers writing one session keep both their cookies, and retiring is once per generation.

/** A session of the pool for a page of `host`, which must not be waiting out a Retry-After. */
async function live(pool: SessionPool, host = 'shop.test'): Promise<SessionRef & { login: string }> {
  const t = await pool.take(host);
  if ('waitMs' in t) assert.fail(`every session waits ${t.waitMs} ms`);
  return t;
}

describe('session pool in Redis', function () {
  this.timeout(30_000);
  let server: RedisServer;
  let redis: Redis;
  before(async () => {
    server = await startRedis();
    redis = new Redis(server.url);
  });
  after(async () => {
    redis?.disconnect();
    await server?.stop();
  });

  it('keeps what a response may set, sends what a URL may get, and forgets expired cookies', async () => {
    const pool = new SessionPool(redis, 'cookies', {
      pool: 1,
      maxPages: null,
      retireOnStatus: [403],
      retireOnSelector: null,
    });
    const s = await live(pool);
    const jar = pool.cookies(s);
    await jar.store('http://shop.test/a/page', [
      'sid=1; Path=/',
      'deep=2',
      'evil=3; Domain=other.test',
      'sec=4; Secure; Path=/',
      'wide=5; Domain=shop.test; Path=/',
    ]);
    assert.equal(await jar.header('http://shop.test/'), 'sid=1; wide=5', 'another domain refused, default path /a');
    assert.equal(await jar.header('http://shop.test/a/x'), 'deep=2; sid=1; wide=5');
    assert.equal(
      await jar.header('https://shop.test/'),
      'sid=1; wide=5',
      'a Secure cookie set over http is refused (RFC 6265bis)',
    );
    await jar.store('https://shop.test/', ['sec=4; Secure; Path=/']);
    assert.equal(
      await jar.header('https://shop.test/'),
      'sid=1; wide=5; sec=4',
      'longest path first, then oldest first (RFC 6265 5.4)',
    );
    assert.equal(await jar.header('http://shop.test/'), 'sid=1; wide=5', 'and sent only over https');
    assert.equal(
      await jar.header('http://www.shop.test/'),
      'wide=5',
      'a Domain cookie goes to subdomains, a host-only one does not',
    );
    assert.equal(await jar.header('http://other.test/'), null);
    await jar.store('http://shop.test/', ['sid=; Max-Age=0; Path=/']);
    assert.equal(await jar.header('http://shop.test/'), 'wide=5', 'an expired cookie is removed');
  });

  it('sends cookies of equal paths oldest first, even when two responses set them in one millisecond', async () => {
    const pool = new SessionPool(redis, 'order', {
      pool: 1,
      maxPages: null,
      retireOnStatus: [],
      retireOnSelector: null,
    });
    const jar = pool.cookies(await live(pool));
    // One response sets 20 cookies and the next one more, at once: RFC 6265 5.4 sends them in the order they came.
    const first = Array.from({ length: 20 }, (_, i) => `a${i}=${i}; Path=/`);
    await jar.store('http://shop.test/', first);
    await jar.store('http://shop.test/', ['later=1; Path=/']);
    assert.equal(await jar.header('http://shop.test/'), [...first.map((c) => c.split(';')[0]), 'later=1'].join('; '));
  });

  it('keeps the cookies of concurrent responses in one session', async () => {
    const pool = new SessionPool(redis, 'concurrent', {
      pool: 1,
      maxPages: null,
      retireOnStatus: [],
      retireOnSelector: null,
    });
    const s = await live(pool);
    await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        new SessionPool(redis, 'concurrent', pool.spec).cookies(s).store('http://shop.test/', [`c${i}=${i}`]),
      ),
    );
    const header = (await pool.cookies(s).header('http://shop.test/'))!;
    assert.equal(header.split('; ').length, 20, header);
  });

  it('retires a session once per generation, ignores late cookies of a retired one, and replaces it after maxPages', async () => {
    const pool = new SessionPool(redis, 'retire', {
      pool: 1,
      maxPages: 2,
      retireOnStatus: [403],
      retireOnSelector: null,
    });
    const first = await live(pool);
    await pool.cookies(first).store('http://shop.test/', ['a=1']);
    assert.equal(await pool.retire(first), true);
    assert.equal(await pool.retire(first), false, 'a second worker seeing the same block retires nothing');
    await pool.cookies(first).store('http://shop.test/', ['late=1']);
    const second = await live(pool);
    assert.notEqual(second.id, first.id);
    assert.equal(
      await pool.cookies(second).header('http://shop.test/'),
      null,
      'the new session starts without the old cookies',
    );
    await assert.rejects(
      pool.cookies(first).header('http://shop.test/'),
      (e: unknown) => e instanceof FetchFailure && e.cause_ === 'session' && e.retryable,
    );
    const third = await live(pool);
    assert.equal(third.id, second.id, 'page 2 of the session');
    const fourth = await live(pool);
    assert.notEqual(fourth.id, second.id, 'page 3 is past maxPages 2: a new session');
  });

  it('keeps a Retry-After per session and per host: a waiting session is passed over, and when all wait the soonest end is said', async () => {
    const pool = new SessionPool(redis, 'waits', {
      pool: 2,
      maxPages: null,
      retireOnStatus: [429],
      retireOnSelector: null,
    });
    const a = await live(pool);
    await pool.waitFor(a, 'shop.test', Date.now() + 60_000);
    for (let i = 0; i < 10; i++) {
      const t = await pool.take('shop.test');
      assert.ok(!('waitMs' in t) && t.slot !== a.slot, 'the other session, whichever slot the pick starts from');
    }
    const b = await live(pool);
    await pool.waitFor(b, 'shop.test', Date.now() + 30_000);
    const all = await pool.take('shop.test');
    assert.ok(
      'waitMs' in all && all.waitMs > 25_000 && all.waitMs <= 30_000,
      `the soonest end of a wait: ${JSON.stringify(all)}`,
    );
    const other = await pool.take('other.test');
    assert.ok(!('waitMs' in other), 'another host is not waited for');
    assert.equal(await pool.retire(b), true);
    const fresh = await pool.take('shop.test');
    assert.ok(!('waitMs' in fresh) && fresh.slot === b.slot, "a retired session's wait goes with it");
  });

  it('starts the sessions of another run afresh: no cookies, no login, no waits of the last run', async () => {
    const pool = new SessionPool(redis, 'runs', {
      pool: 1,
      maxPages: null,
      retireOnStatus: [],
      retireOnSelector: null,
    });
    const first = await pool.take('shop.test', 'run-1');
    assert.ok(!('waitMs' in first));
    await pool.cookies(first).store('http://shop.test/', ['sid=1']);
    await pool.setLoginState(first, 'ok');
    await pool.waitFor(first, 'shop.test', Date.now() + 60_000);
    const again = await pool.take('other.test', 'run-1');
    assert.ok(
      !('waitMs' in again) && again.id === first.id && again.login === 'ok',
      'the same run keeps its session (a resumed run too)',
    );
    const next = await pool.take('shop.test', 'run-2');
    assert.ok(!('waitMs' in next), "the last run's wait is gone with its session");
    assert.notEqual(next.id, first.id);
    assert.equal(next.login, '', 'a new run logs in again');
    assert.equal(await pool.cookies(next).header('http://shop.test/'), null);
  });
});
