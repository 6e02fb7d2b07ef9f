import assert from 'node:assert/strict';
import { canonicalize } from '../../src/core/url/canonical';
import { globToRegExp, compileUrlPattern } from '../../src/core/url/patterns';
import { decideLink } from '../../src/core/url/scope';
import { isPrivateAddress } from '../../src/core/url/hosts';
import { parseTask } from '../../src/core/task/parse';
import { bucketBitsFor, seenSlot } from '../../src/frontier/dedup';
import { fingerprint, fingerprintHex } from '../../src/core/url/fingerprint';
import { createHash } from 'node:crypto';

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

describe('URL canonicalisation: remembered results', () => {
  // canonicalize remembers results by a key (the URL; the base's authority or directory and the reference). With a
  // fresh options object nothing is remembered, so each answer below is compared with the computed one.
  const bases = [
    'http://x.com/dir/page.html',
    'http://x.com/other/',
    'https://x.com/dir/',
    'http://x.com:8080/d/',
    'http://X.COM:80/d/e',
    'http://u:p@x.com/d/',
    'http://x.com',
    'http://x.com?q',
    'http://y.com/a/b/c',
    'http://x.com\\d/',
    ' http://x.com/d/',
    undefined,
    'http://x.com/dir/other.html?a=1',
    'http://x.com/dir/',
    'http://x.com/dir',
    'http://x.com/dir/sub/page',
    'https://x.com/dir/page.html',
    'http://x.com/d%2Fe/f',
    'http://x.com/a/./b/../c/p',
    'ftp://x.com/dir/',
    'http://x.com/dir/page.html#frag',
    'http://x.com/di\tr/p',
  ];
  const hrefs = [
    '/',
    '/a',
    '/a?b=1&a=2',
    '/a#x',
    '/%7Ea/%2f',
    '/a/../b/./c',
    '/ref?ref=1&z=2&src=3',
    ' /a ',
    '/a\tb',
    '/a\\b',
    '/\\x.com/a',
    '//x.com/a',
    '\\\\x.com/a',
    'a/b',
    '../c',
    './d',
    '?q=1',
    '#f',
    '',
    'http://X.com:80/a#f',
    'HTTP://x.com/%7Ea?b&a',
    'https://x.com/',
    'http://u:p@x.com/',
    'http:/x',
    'http:x',
    'mailto:x@y.z',
    'javascript:void(0)',
    'http://[::1]/',
    'http://bücher.example/',
    'page-2.html',
    'book-21.html?ref=list&src=p2',
    'sub/x.html',
    '../up.html',
    '../../../top',
    'a:b',
    'https:rel',
    'ftp:x',
    'ws:y',
    'file:z',
    'x\u0001?q',
    '\u0001?q',
    'p\nq',
    '%2e%2e/x',
    '.',
    '..',
    'c:\\\\windows',
    'data:text/html,hi',
  ];
  const o = { sortQuery: true, stripTrailingSlash: true, dropParams: [globToRegExp('ref'), globToRegExp('src')] };

  it('answers as computing it afresh, whatever was asked before', () => {
    const cases: [string, string | undefined][] = [];
    for (const b of bases) for (const h of hrefs) cases.push([h, b]);
    // Random references too: the characters URL parsing treats specially, in any order.
    const alphabet = [
      '/',
      '\\',
      '?',
      '#',
      '.',
      '..',
      ':',
      '%2e',
      '%7E',
      'a',
      'B',
      '=',
      '&',
      ' ',
      '\t',
      '@',
      'x.com',
      'http:',
      'https:',
      '//',
      '\u0001',
      'ws:',
    ];
    let seed = 7;
    const rnd = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed % n);
    for (let i = 0; i < 6_000; i++) {
      const h = Array.from({ length: 1 + rnd(8) }, () => alphabet[rnd(alphabet.length)]).join('');
      cases.push([h, bases[rnd(bases.length)]]);
    }
    for (let round = 0; round < 2; round++) {
      for (const [h, b] of cases) {
        assert.deepEqual(canonicalize(h, b, o), canonicalize(h, b, { ...o }), `${JSON.stringify(h)} against ${b}`);
      }
    }
  });

  it('keeps the options of each task apart', () => {
    const keep = { ...o, dropParams: [] };
    assert.equal((canonicalize('/a?ref=1', 'http://x.com/', o) as { url: string }).url, 'http://x.com/a');
    assert.equal((canonicalize('/a?ref=1', 'http://x.com/', keep) as { url: string }).url, 'http://x.com/a?ref=1');
  });
});

describe('URL patterns', () => {
  it('globs: * within a segment, ** across', () => {
    const g = globToRegExp('https://a.com/catalogue/*.html');
    assert.ok(g.test('https://a.com/catalogue/page-1.html'));
    assert.ok(!g.test('https://a.com/catalogue/x/page-1.html'));
    assert.ok(globToRegExp('**/catalogue/**').test('https://a.com/catalogue/x/y'));
  });
  it('regexes written re:…, matched anywhere unless anchored', () => {
    assert.ok(compileUrlPattern('re:book-\\d+').regex.test('http://a.com/book-12.html'));
    assert.ok(!compileUrlPattern('re:^book').regex.test('http://a.com/book-12.html'));
  });
  // Issue 21, item 2: each of these read the other way round before.
  it('a pattern starting with / is a path glob, matched against path and query on any host', () => {
    const author = compileUrlPattern('/author/*').regex;
    assert.ok(author.test('http://127.0.0.1:8080/author/albert-einstein'));
    assert.ok(author.test('https://quotes.example/author/x?page=2'));
    assert.ok(!author.test('http://127.0.0.1:8080/tag/author/x'), 'anchored at the start of the path');
    assert.ok(!author.test('http://127.0.0.1:8080/author/a/b'), '* stays within a segment');
    const one = compileUrlPattern('/1/').regex;
    assert.ok(one.test('http://127.0.0.1/1/'));
    assert.ok(
      !one.test('http://127.0.0.1/author/x'),
      '"/1/" is the path /1/, not the regex 1 (which matched every URL on 127.0.0.1)',
    );
    const page = compileUrlPattern('/page/*/').regex;
    assert.ok(page.test('http://h/page/2/'));
    assert.ok(!page.test('http://h/pag'), '"/page/*/" is not the regex page/*');
    assert.ok(compileUrlPattern('/**').regex.test('http://h/a/b?c=d'));
  });
  it('an old /regex/ is refused with the re: form to write instead', () => {
    assert.throws(
      () => compileUrlPattern('/book-\\d+/'),
      /'\/book-\\d\+\/' starts with '\/', so it is a path glob now, .*write it as 're:book-\\d\+'/,
    );
    assert.throws(() => compileUrlPattern('/book/i'), /flags are not supported/);
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
    const { task: t2 } = parseTask(
      `name: t\nstart: [http://127.0.0.1:8737/]\nscope: { allow: ["**"] }\nrules: [{ name: r }]\n`,
      't.yaml',
    );
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
  it('a start host is host and port: another port of it is another host (issue 30)', () => {
    const { task: t3 } = parseTask(
      `name: t\nstart: [http://shop.example:8080/, http://127.0.0.1:8737/]\nrules: [{ name: r }]\n`,
      't.yaml',
    );
    const d = (href: string) => {
      const r = decideLink(t3!, href, 'http://shop.example:8080/', 1);
      return r.ok ? 'ok' : r.reason;
    };
    assert.equal(d('http://shop.example:8080/a'), 'ok');
    assert.equal(d('http://shop.example/a'), 'offsite', "port 80 is not the start URL's 8080");
    assert.equal(d('http://shop.example:8081/a'), 'offsite');
    assert.equal(d('http://127.0.0.1:8737/a'), 'ok', 'a private start host is allowed on its own port');
    assert.equal(d('http://127.0.0.1:8738/a'), 'private', 'and on no other');
  });
  it('classifies addresses', () => {
    for (const a of ['127.0.0.1', '10.0.0.1', '192.168.1.1', '172.16.0.1', '::1', 'fd00::1', '::ffff:127.0.0.1'])
      assert.ok(isPrivateAddress(a), a);
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
  it('keeps the fingerprints of earlier versions: the first 64 bits of SHA-1, so dedup state in Redis stays valid', () => {
    // The definition (createHash, as every earlier version computed it) on many URLs.
    for (let i = 0; i < 1_000; i++) {
      const url = `http://example.com/p/${i}?q=${i * 7}`;
      const want = createHash('sha1').update(url).digest();
      assert.equal(fingerprint(url), want.readBigUInt64BE(0), url);
      assert.equal(fingerprintHex(url), want.subarray(0, 8).toString('hex'), url);
    }
    assert.deepEqual(seenSlot('http://a.com/', 12), {
      bucket: Number(fingerprint('http://a.com/') >> 52n),
      member: (fingerprint('http://a.com/') & ((1n << 63n) - 1n)).toString(),
    });
  });
});
