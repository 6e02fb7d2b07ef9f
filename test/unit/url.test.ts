import assert from 'node:assert/strict';
import { canonicalize } from '../../src/core/url/canonical';
import { globToRegExp, compileUrlPattern } from '../../src/core/url/patterns';
import { decideLink } from '../../src/core/url/scope';
import { isPrivateAddress } from '../../src/core/url/hosts';
import { parseTask } from '../../src/core/task/parse';
import { bucketBitsFor, seenSlot } from '../../src/queue/dedup';

const opts = { sortQuery: true, stripTrailingSlash: false, dropParams: [] as RegExp[] };
const canon = (u: string, o = opts) => {
  const r = canonicalize(u, undefined, o);
  return r.ok ? r.url : `!${r.reason}`;
};

describe('URL canonicalisation', () => {
  it('lower-cases scheme and host, drops default ports and fragments', () => {
    assert.equal(canon('HTTP://Example.COM:80/a/b#frag'), 'http://example.com/a/b');
    assert.equal(canon('https://example.com:443'), 'https://example.com/');
    assert.equal(canon('https://example.com:8443/x'), 'https://example.com:8443/x');
  });
  it('sorts query parameters stably and drops an empty query', () => {
    assert.equal(canon('http://a.com/p?b=2&a=1&b=1'), 'http://a.com/p?a=1&b=2&b=1');
    assert.equal(canon('http://a.com/p?'), 'http://a.com/p');
    assert.equal(canon('http://a.com/p?b=2&a=1', { ...opts, sortQuery: false }), 'http://a.com/p?b=2&a=1');
  });
  it('normalises percent-encoding', () => {
    assert.equal(canon('http://a.com/%7euser/%2f?q=%41%2a'), 'http://a.com/~user/%2F?q=A%2A');
  });
  it('resolves dot segments and IDNs', () => {
    assert.equal(canon('http://a.com/x/../y/./z'), 'http://a.com/y/z');
    assert.equal(canon('http://bücher.example/'), 'http://xn--bcher-kva.example/');
  });
  it('drops configured parameters and, when asked, trailing slashes', () => {
    const o = { sortQuery: true, stripTrailingSlash: true, dropParams: [globToRegExp('utm_*'), globToRegExp('ref')] };
    assert.equal(canon('http://a.com/dir/?utm_source=x&id=3&ref=y', o), 'http://a.com/dir?id=3');
    assert.equal(canon('http://a.com/', o), 'http://a.com/');
  });
  it('refuses non-http schemes, credentials and overlong URLs', () => {
    assert.equal(canon('javascript:alert(1)'), '!scheme');
    assert.equal(canon('data:text/html,hi'), '!scheme');
    assert.equal(canon('file:///etc/passwd'), '!scheme');
    assert.equal(canon('mailto:a@b.c'), '!scheme');
    assert.equal(canon('http://user:pw@a.com/'), '!credentials');
    assert.equal(canon('http://a.com/' + 'x'.repeat(3000)), '!too-long');
    assert.equal(canon('http://'), '!invalid');
  });
});

describe('URL patterns', () => {
  it('globs: * within a segment, ** across', () => {
    const g = globToRegExp('https://a.com/catalogue/*.html');
    assert.ok(g.test('https://a.com/catalogue/page-1.html'));
    assert.ok(!g.test('https://a.com/catalogue/x/page-1.html'));
    assert.ok(globToRegExp('**/catalogue/**').test('https://a.com/catalogue/x/y'));
  });
  it('regexes between slashes', () => {
    assert.ok(compileUrlPattern('/book-\\d+/').regex.test('http://a.com/book-12.html'));
  });
});

describe('link decisions', () => {
  const { task } = parseTask(
    `name: t
start: [http://127.0.0.1:8737/]
scope: { maxDepth: 2, deny: ["**/private/**"] }
rules: [{ name: r }]
`,
    't.yaml',
  );
  const decide = (href: string, depth = 1) => {
    const d = decideLink(task!, href, 'http://127.0.0.1:8737/x/', depth);
    return d.ok ? 'ok' : d.reason;
  };
  it('keeps same-host links and drops off-site ones by default', () => {
    assert.equal(decide('page.html'), 'ok');
    assert.equal(decide('https://other.example/'), 'offsite');
  });
  it('applies deny patterns and depth', () => {
    assert.equal(decide('/private/a.html'), 'denied');
    assert.equal(decide('page.html', 3), 'depth');
  });
  it('never lets a page steer the crawl to private addresses off the start host', () => {
    const { task: t2 } = parseTask(`name: t\nstart: [http://127.0.0.1:8737/]\nscope: { allow: ["**"] }\nrules: [{ name: r }]\n`, 't.yaml');
    const d = (href: string) => {
      const r = decideLink(t2!, href, 'http://127.0.0.1:8737/', 1);
      return r.ok ? 'ok' : r.reason;
    };
    assert.equal(d('http://127.0.0.1:8737/a'), 'ok');
    assert.equal(d('http://127.0.0.1:6379/'), 'private');
    assert.equal(d('http://localhost/'), 'private');
    assert.equal(d('http://10.1.2.3/'), 'private');
    assert.equal(d('http://[::1]:80/'), 'private');
    assert.equal(d('http://169.254.169.254/latest/meta-data'), 'private');
    assert.equal(d('https://example.com/'), 'ok');
  });
  it('classifies addresses', () => {
    for (const a of ['127.0.0.1', '10.0.0.1', '192.168.1.1', '172.16.0.1', '::1', 'fd00::1', '::ffff:127.0.0.1']) assert.ok(isPrivateAddress(a), a);
    for (const a of ['8.8.8.8', '1.1.1.1', '2606:4700::1111']) assert.ok(!isPrivateAddress(a), a);
  });
});

describe('dedup slots', () => {
  it('sizes buckets from the expected number of URLs', () => {
    assert.equal(bucketBitsFor(100), 4);
    assert.equal(bucketBitsFor(1_000_000), 12);
    assert.equal(bucketBitsFor(null), 12);
  });
  it('maps a URL to a stable bucket and an integer member', () => {
    const a = seenSlot('http://a.com/', 12);
    assert.deepEqual(seenSlot('http://a.com/', 12), a);
    assert.ok(a.bucket >= 0 && a.bucket < 4096);
    assert.match(a.member, /^\d+$/);
    assert.ok(BigInt(a.member) < 1n << 63n);
  });
});
