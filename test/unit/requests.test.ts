import assert from 'node:assert/strict';
import { FetchFailure } from '../../src/worker/fetcher';
import { mayRetry, ruleOptions, sendOptions } from '../../src/worker/requests';
import { formatDiagnostic } from '../../src/core/task/diagnostics';
import { parseTask } from '../../src/core/task/parse';
import { analysePage } from '../../src/core/pipeline/page';
import { bodyLabel, expandBody } from '../../src/core/request/body';
import { requestKey } from '../../src/core/request/build';
import type { CrawlTask } from '../../src/core/task/model';
import { credentialVariables } from '../../src/core/task/secrets';
import { urlFacts } from '../support/pageFacts';

// Requests and JSON responses in task files: what the parser makes of them, mistakes at their line and field, and
// what a page yields: items and links from a JSON document, forms and URL templates built into requests, the
// next page of a series. Pure: the same analysePage the workers and the preview run.

function task(yaml: string): CrawlTask {
  const { task, diagnostics } = parseTask(yaml, 't.crawl.yaml');
  assert.deepEqual(
    diagnostics.filter((d) => d.severity === 'error').map((d) => formatDiagnostic(d)),
    [],
  );
  return task!;
}

function errors(yaml: string): string[] {
  const { task, diagnostics } = parseTask(yaml, 'bad.crawl.yaml');
  assert.equal(task, null, 'the file has errors');
  return diagnostics.filter((d) => d.severity === 'error').map((d) => formatDiagnostic(d));
}

const api = `name: api
start:
  - url: http://api.test/v1/products?page={page}
    rule: products
rules:
  - name: products
    request: { headers: { accept: application/json, x-key: '\${CRAWL_STUDIO_T_KEY}' } }
    items:
      - type: product
        scope: $.data.products
        key: [id]
        fields:
          id: $.id
          name: { selector: $.name, required: true }
          price: { selector: $.price, regex: '^\\d+' }
          tags: { selector: $.tags, all: true }
          dims: $.dims
          link: { selector: $.href, url: true }
    follow:
      - selector: $.data.products[*].href
        to: product
  - name: product
    items: [{ type: detail, fields: { id: $.id } }]
`;

describe('requests and JSON responses', () => {
  it('reads a JSON response: items by JSONPath, their fields as text, links routed like HTML links', () => {
    const t = task(api);
    const rule = t.rules[0]!;
    assert.equal(rule.readsJson, true);
    assert.deepEqual(rule.headers, { accept: 'application/json', 'x-key': '${CRAWL_STUDIO_T_KEY}' });
    assert.deepEqual(
      credentialVariables(t),
      ['CRAWL_STUDIO_T_KEY'],
      'what the editor passes its workers from Secret Storage',
    );
    assert.equal(t.start[0]!.url, 'http://api.test/v1/products?page=1', 'the first page of the series');
    const body = JSON.stringify({
      data: {
        products: [
          { id: 7, name: ' Red  shoe ', price: '12.50 EUR', tags: ['a', 'b'], dims: { w: 1 }, href: '/p/7' },
          { id: 8, name: null, price: 3, tags: [], href: 'http://elsewhere.test/p/8' },
          { id: 9, name: 'Hat', price: 4, tags: 'one', href: 42 },
        ],
      },
    });
    const out = analysePage(t, {
      facts: urlFacts('http://api.test/v1/products?page=1'),
      html: body,
      rule,
      depth: 0,
      json: true,
    });
    assert.deepEqual(
      out.items.map((i) => i.data),
      [
        { id: '7', name: 'Red shoe', price: '12', tags: ['a', 'b'], dims: '{"w":1}', link: 'http://api.test/p/7' },
        { id: '9', name: 'Hat', price: '4', tags: ['one'], dims: null, link: 'http://api.test/v1/42' },
      ],
    );
    assert.deepEqual(
      out.items.map((i) => i.key),
      ['7', '9'],
    );
    assert.deepEqual(
      out.problems.map((p) => p.message),
      [`required field 'name' empty`],
    );
    assert.deepEqual(
      out.kept.map((k) => [k.url, k.rule]),
      [['http://api.test/p/7', 'product']],
    );
    assert.deepEqual(
      out.dropped.map((d) => [d.url, d.reason]),
      [['http://elsewhere.test/p/8', 'offsite']],
      'a number (42) is not a link',
    );
  });

  it('counts the pages of a series until one yields nothing, at the depth of its first page', () => {
    const t = task(api);
    const page = (items: unknown[]) => JSON.stringify({ data: { products: items } });
    const series = { of: { start: 0 }, page: 1, values: {} };
    const out = analysePage(t, {
      facts: urlFacts(t.start[0]!.url),
      html: page([{ id: 1, name: 'x' }]),
      rule: t.rules[0]!,
      depth: 0,
      json: true,
      series,
    });
    const next = out.kept.find((k) => k.next)!;
    assert.equal(next.url, 'http://api.test/v1/products?page=2');
    assert.equal(next.depth, 0);
    assert.equal(next.rule, 'products');
    assert.deepEqual(next.series, { of: { start: 0 }, page: 2, values: {} });
    const empty = analysePage(t, {
      facts: urlFacts(next.url),
      html: page([]),
      rule: t.rules[0]!,
      depth: 0,
      json: true,
      series: next.series,
    });
    assert.deepEqual(empty.kept, [], 'an empty page ends the series');
  });

  it('stops a series at pages.max and sends a JSON body whose {page} keeps its number type', () => {
    const t = task(`name: s
start:
  - url: http://api.test/search
    json: { q: 'shoes {{x}}', offset: '{page}', key: '\${CRAWL_STUDIO_T_KEY}' }
    pages: { from: 0, step: 50, max: 50 }
rules: [{ name: r, items: [{ type: t, scope: $.hits, fields: { id: $.id } }] }]
`);
    const start = t.start[0]!;
    assert.equal(start.request!.method, null);
    assert.equal(start.request!.idempotent, false, 'a POST is not retried like a GET unless it says so');
    const hits = JSON.stringify({ hits: [{ id: 1 }] });
    const first = analysePage(t, {
      facts: urlFacts(start.url),
      html: hits,
      rule: t.rules[0]!,
      depth: 0,
      json: true,
      series: { of: { start: 0 }, page: 0, values: {} },
    });
    const next = first.kept[0]!;
    assert.equal(next.request!.method, 'POST');
    assert.equal(bodyLabel(next.request!.body!), '{"q":"shoes {x}","offset":50,"key":"${CRAWL_STUDIO_T_KEY}"}');
    assert.deepEqual(expandBody(next.request!.body!, { CRAWL_STUDIO_T_KEY: 'k"1' }), {
      text: '{"q":"shoes {x}","offset":50,"key":"k\\"1"}',
      missing: [],
    });
    const last = analysePage(t, {
      facts: urlFacts(start.url),
      html: hits,
      rule: t.rules[0]!,
      depth: 0,
      json: true,
      series: next.series!,
    });
    assert.deepEqual(last.kept, [], 'page 100 is past max');
    assert.notEqual(
      requestKey(next.url, next.request),
      requestKey(next.url, first.kept[0]!.request ? { ...next.request!, id: 'other' } : null),
    );
  });

  it('submits a form of the page: its action, method and inputs, the fields filled in, a CSRF token left out of its identity', () => {
    const t = task(`name: f
start: [http://shop.test/]
rules:
  - name: home
    follow:
      - form: form.search
        fields: { q: '{q}', key: '\${CRAWL_STUDIO_T_KEY}' }
        values: { q: { selector: '#term', attr: data-q } }
        to: results
  - name: results
`);
    const form = (
      token: string,
    ) => `<span id="term" data-q="red shoes"></span><form class="search" method="post" action="/find">
      <input type="hidden" name="csrfmiddlewaretoken" value="${token}"><input name="q" value="old"><input type="checkbox" name="new" checked>
      <input type="checkbox" name="off"><select name="sort"><option value="a">A</option><option value="p" selected>P</option></select>
      <input type="submit" name="go" value="Go"><input name="dis" disabled value="x"></form>`;
    const a = analysePage(t, {
      facts: urlFacts('http://shop.test/'),
      html: form('T1'),
      rule: t.rules[0]!,
      depth: 0,
    }).kept;
    const b = analysePage(t, {
      facts: urlFacts('http://shop.test/other'),
      html: form('T2'),
      rule: t.rules[0]!,
      depth: 0,
    }).kept;
    assert.equal(a.length, 1);
    assert.equal(a[0]!.url, 'http://shop.test/find');
    assert.equal(a[0]!.request!.method, 'POST');
    assert.equal(
      bodyLabel(a[0]!.request!.body!),
      'csrfmiddlewaretoken=T1&new=on&sort=p&q=red+shoes&key=${CRAWL_STUDIO_T_KEY}',
    );
    assert.equal(
      requestKey(a[0]!.url, a[0]!.request),
      requestKey(b[0]!.url, b[0]!.request),
      'the same search from two pages is one request',
    );
    assert.ok(!JSON.stringify(a).includes('secret'), 'no value of a variable on the job');
  });

  it('builds requests from a URL template with values, one per match of an `all` value; a missing value makes none', () => {
    const t = task(`name: u
start: [http://shop.test/]
rules:
  - name: home
    follow:
      - url: /api/cat/{id}/items?page={page}
        values: { id: { selector: li.cat, attr: data-id, all: true } }
        to: items
      - url: /api/next?cursor={cursor}
        values: { cursor: { selector: '#more', attr: data-cursor } }
        to: items
  - name: items
    items: [{ type: i, scope: $.items, fields: { id: $.id } }]
`);
    const out = analysePage(t, {
      facts: urlFacts('http://shop.test/'),
      html: '<li class="cat" data-id="a b"></li><li class="cat" data-id="7"></li>',
      rule: t.rules[0]!,
      depth: 0,
    });
    assert.deepEqual(
      out.kept.map((k) => [k.url, k.depth, k.series?.page, k.series?.values]),
      [
        ['http://shop.test/api/cat/a%20b/items?page=1', 1, 1, { id: 'a b' }],
        ['http://shop.test/api/cat/7/items?page=1', 1, 1, { id: '7' }],
      ],
    );
    // The series goes on from a page of the other rule, resolved against the page the template was found on.
    const next = analysePage(t, {
      facts: urlFacts(out.kept[1]!.url),
      html: '{"items":[{"id":1}]}',
      rule: t.rules[1]!,
      depth: 1,
      json: true,
      series: out.kept[1]!.series!,
    }).kept;
    assert.deepEqual(
      next.map((k) => k.url),
      ['http://shop.test/api/cat/7/items?page=2'],
    );
  });

  it('names the file, line and field of every mistake', () => {
    const lines = errors(`name: bad
start:
  - url: http://api.test/items?page={page}&q={q}
  - url: http://api.test/search
    method: GET
    fields: { q: x }
rules:
  - name: r
    items: [{ type: t, scope: '$.items[', fields: { a: { selector: $.a, attr: href } } }]
    follow:
      - selector: a
        fields: { q: x }
      - url: /x?t=\${CRAWL_STUDIO_T_KEY}
      - url: /y?p=1
        pages: { from: 2 }
      - url: /z/{id}
      - form: form
        json: { a: 1 }
      - {}
`);
    const want = [
      /bad\.crawl\.yaml:3:5: error: start\[0\]\.url: a start entry has no page to read \{q\} from/,
      /bad\.crawl\.yaml:5:13: error: start\[1\]\.method: a GET has no body/,
      /bad\.crawl\.yaml:9:31: error: rules\[0\]\.items\[0\]\.scope: '\$\.items\[' is not a valid JSONPath/,
      /bad\.crawl\.yaml:9:73: error: rules\[0\]\.items\[0\]\.fields\.a\.attr: 'attr' reads HTML/,
      /bad\.crawl\.yaml:12:9: error: rules\[0\]\.follow\[0\]\.fields: 'fields' builds a request/,
      /bad\.crawl\.yaml:13:14: error: rules\[0\]\.follow\[1\]\.url: \$\{CRAWL_STUDIO_T_KEY\} in a URL/,
      /bad\.crawl\.yaml:15:16: error: rules\[0\]\.follow\[2\]\.pages: 'pages' counts \{page\}/,
      /bad\.crawl\.yaml:16:9: error: rules\[0\]\.follow\[3\]\.url: \{id\} is not one of the entry's values/,
      /bad\.crawl\.yaml:18:9: error: rules\[0\]\.follow\[4\]\.json: a form is sent form-encoded/,
      /bad\.crawl\.yaml:19:9: error: rules\[0\]\.follow\[5\]: give 'selector'/,
    ];
    for (const re of want)
      assert.ok(
        lines.some((l) => re.test(l)),
        `${re}\nin:\n${lines.join('\n')}`,
      );
  });
});

describe('requests in the worker', () => {
  const post = {
    method: 'POST' as const,
    body: { type: 'json' as const, parts: ['{"k":"', 'CRAWL_STUDIO_T_KEY', '"}'] },
    idempotent: false,
    id: '0123456789abcdef',
  };

  it("fills in a body's variables as it sends, and fails by name (never by value) when one is unset", () => {
    assert.deepEqual(sendOptions(post, { CRAWL_STUDIO_T_KEY: 'v' }), {
      method: 'POST',
      post: { contentType: 'application/json', body: '{"k":"v"}' },
    });
    const f = sendOptions(post, {});
    assert.ok(
      f instanceof FetchFailure && f.cause_ === 'request' && /CRAWL_STUDIO_T_KEY/.test(f.message) && !f.retryable,
    );
    assert.ok(
      sendOptions({ method: 'DELETE' }, {}) instanceof FetchFailure,
      'a job whose request is not one a worker sends',
    );
    assert.deepEqual(sendOptions(undefined, {}), {});
  });

  it('sends a POST again only after failures the server did not act on, unless it is idempotent', () => {
    const fail = (
      cause: ConstructorParameters<typeof FetchFailure>[0],
      message: string,
      status: number | null = null,
    ) => new FetchFailure(cause, message, true, status);
    assert.equal(mayRetry(post, fail('network', 'network error fetching x: ECONNREFUSED connect')), true);
    assert.equal(mayRetry(post, fail('dns', 'EAI_AGAIN')), true);
    assert.equal(mayRetry(post, fail('http', 'HTTP 503', 503)), true);
    assert.equal(mayRetry(post, fail('http', 'HTTP 429', 429)), true);
    assert.equal(mayRetry(post, fail('http', 'HTTP 502', 502)), false);
    assert.equal(mayRetry(post, fail('timeout', 'timed out')), false);
    assert.equal(mayRetry(post, fail('network', 'ECONNRESET')), false);
    assert.equal(mayRetry({ ...post, idempotent: true }, fail('timeout', 'timed out')), true);
    assert.equal(mayRetry(undefined, fail('timeout', 'timed out')), true, 'a GET as always');
    assert.equal(mayRetry(undefined, new FetchFailure('http', 'HTTP 404', false, 404)), false);
  });

  it("gives each rule its headers over the task's, a JSON accept for rules that read JSON, and the task's own options otherwise", () => {
    const t = task(api + `  - name: plain\n`);
    const base = {
      timeoutMs: 1000,
      maxBytes: 1000,
      maxRedirects: 1,
      headers: {},
      userAgent: 'ua',
      privateAllowed: null,
    };
    const opts = ruleOptions(t, base, { CRAWL_STUDIO_T_KEY: 'v' });
    assert.deepEqual((opts(t.rules[0]!) as typeof base).headers, { accept: 'application/json', 'x-key': 'v' });
    assert.deepEqual(
      (opts(t.rules[1]!) as typeof base).headers,
      { accept: 'application/json, */*;q=0.5' },
      'a rule reading JSON asks for it',
    );
    assert.equal(opts(t.rules[2]!), base, 'a rule without headers fetches as before');
    const unset = ruleOptions(t, base, {})(t.rules[0]!);
    assert.ok(unset instanceof FetchFailure && /CRAWL_STUDIO_T_KEY/.test(unset.message));
  });
});
