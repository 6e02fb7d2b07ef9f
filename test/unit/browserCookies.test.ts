import assert from 'node:assert/strict';
import { Cookie } from 'tough-cookie';
import { cookieChanges, fromBrowser, toBrowser } from '../../src/worker/browser/cookies';
import { cookieField } from '../../src/worker/sessions';

// A session's cookies (tough-cookie) in a browser context (Playwright's form) and back (issue 18).

const browserCookie = (name: string, value: string, extra: { domain?: string; expires?: number } = {}) => ({
  name,
  value,
  domain: 'shop.example',
  path: '/',
  expires: -1,
  httpOnly: false,
  secure: false,
  sameSite: 'Lax' as const,
  ...extra,
});

describe('browser cookies', () => {
  it('lends host-only and domain cookies as Chromium reads them, with their expiry and flags', () => {
    const host = Cookie.parse('auth=t1; Path=/; HttpOnly; SameSite=Strict')!;
    host.domain = 'shop.example';
    host.hostOnly = true;
    const domain = Cookie.parse('lang=en; Domain=shop.example; Path=/a; Secure; Max-Age=3600')!;
    assert.deepEqual(toBrowser(host), {
      name: 'auth',
      value: 't1',
      domain: 'shop.example',
      path: '/',
      expires: -1,
      httpOnly: true,
      secure: false,
      sameSite: 'Strict',
    });
    const d = toBrowser(domain)!;
    assert.equal(d.domain, '.shop.example', 'a leading dot: the cookie goes to subdomains too');
    assert.equal(d.secure, true);
    assert.ok(Math.abs(d.expires! - (Date.now() / 1000 + 3600)) < 5, 'Max-Age becomes an absolute expiry');
    const ip = Cookie.parse('a=b; Domain=127.0.0.1; Path=/')!;
    assert.equal(toBrowser(ip)!.domain, '127.0.0.1', 'an address never gets a dot');
  });

  it('brings a browser cookie back under the session field the fetcher uses for it', () => {
    const back = fromBrowser(browserCookie('consent', 'yes'));
    assert.equal(cookieField(back), 'c:shop.example;/;consent');
    assert.equal(back.hostOnly, true);
    assert.equal(back.TTL(), Infinity, 'a session cookie lives as long as the session');
    const wide = fromBrowser(browserCookie('lang', 'en', { domain: '.shop.example', expires: Date.now() / 1000 + 60 }));
    assert.equal(cookieField(wide), 'c:shop.example;/;lang');
    assert.equal(wide.hostOnly, false);
    assert.ok(wide.TTL() > 50_000 && wide.TTL() <= 60_000);
    // What the session keeps parses back to the same cookie.
    assert.equal(Cookie.fromJSON(JSON.stringify(wide.toJSON()))!.cookieString(), 'lang=en');
  });

  it('writes back only what the page changed', () => {
    const before = [browserCookie('a', '1'), browserCookie('b', '2'), browserCookie('c', '3')];
    const after = [browserCookie('a', '1'), browserCookie('b', '20'), browserCookie('d', '4')];
    const { set, gone } = cookieChanges(before, after);
    assert.deepEqual(
      set.map((c) => `${c.name}=${c.value}`),
      ['b=20', 'd=4'],
    );
    assert.deepEqual(
      gone.map((c) => c.name),
      ['c'],
    );
    assert.deepEqual(cookieChanges(before, before), { set: [], gone: [] });
  });
});
