import { readFileSync } from 'node:fs';
import { stringify } from 'yaml';
import { chance, int, pick, weighted, type Rng } from './rng';

// Task-file inputs for the parser fuzzer: mutations of valid files, random documents built from the task's own
// vocabulary (so many of them get past the schema into the semantic checks), and hand-shaped hostile documents
// (deep nesting, alias bombs, huge scalars, odd encodings).

const FULL = `name: full-task
start:
  - http://127.0.0.1:8737/
  - { url: "https://example.com/a?b=1#c", rule: detail, priority: 3 }
scope: { allow: ["**/catalogue/**", "/^https://example\\\\.com/.*$/i"], deny: ["**/private/**"], maxPages: 5000, maxDepth: 8, allowPrivate: false }
request:
  timeout: 10s
  userAgent: "Fuzz/1.0"
  headers: { accept-language: "en", x-token: "\${HOME}" }
  maxBytes: 5MB
  maxRedirects: 3
  robots: true
  retries: { attempts: 4, backoff: exponential, delay: 250ms }
politeness: { rateLimit: { max: 20, per: 1s }, perHost: { concurrency: 4, delay: 100ms } }
canonical: { sortQuery: true, stripTrailingSlash: true, dropParams: [utm_*, ref] }
store: { url: "sqlite:.crawl/items.sqlite", onConflict: ignore, batchSize: 100, flushInterval: 500ms }
rules:
  - name: list
    match: ["http://127.0.0.1:8737/", "**/page-*.html"]
    follow:
      - { selector: "li.next a", to: list, priority: 1 }
      - { selector: "article h3 a", attr: href, to: detail }
  - name: detail
    match: ["**/book-*.html"]
    items:
      - type: book
        scope: article.product_page
        key: [upc, title]
        fields:
          title: h1
          upc: { selector: td.upc, required: true }
          price: { selector: p.price, regex: "([0-9.]+)", trim: true }
          tags: { selector: li.tag, all: true }
          body: { selector: div.desc, html: true }
          cover: { selector: img, attr: src, url: true }
`;

const MINIMAL = `name: t
start: [https://example.com/]
rules:
  - name: page
`;

export function corpus(): string[] {
  const out = [FULL, MINIMAL];
  try {
    out.push(readFileSync('examples/books.crawl.yaml', 'utf8'));
  } catch {
    // Run from another folder: the embedded files are enough.
  }
  return out;
}

const TOKENS = [
  ': ',
  '- ',
  '[',
  ']',
  '{',
  '}',
  ',',
  '&a ',
  '*a',
  '&b ',
  '*b',
  '!!str ',
  '!!binary ',
  '!!map ',
  '!!js/function ',
  '!custom ',
  '<<: ',
  '<<: *a',
  '? ',
  '|',
  '>-',
  "'",
  '"',
  '#',
  '%YAML 1.1\n',
  '%TAG ! tag:x,2000:\n',
  '---\n',
  '...\n',
  '\t',
  '\0',
  '\r\n',
  '\u2028',
  '\ufeff',
  '\ud800',
  'é',
  '東京',
  '${HOME}',
  '${NOPE_NOT_SET}',
  '/(a+)+$/',
  '/[/',
  '**',
  '*',
  '?',
  '1e309',
  '-0',
  '0x10',
  '0o17',
  '.inf',
  '-.inf',
  '.nan',
  '~',
  'null',
  'true',
  'yes',
  'on',
  '2026-11-29',
  '12:30:00',
  '9007199254740993',
  '-1',
  '0',
  '99999999999999999999999h',
  '1.5GB',
  '0.0001ms',
  'javascript:alert(1)',
  'file:///etc/passwd',
  'http://[::1]/',
  'http://user:pw@example.com/',
  'data:text/html,x',
  ':is(:is(a))',
  'a[',
  'ul > li:nth-child(2n+1) a',
  '__proto__',
  'constructor',
];

const KEYS = [
  'name',
  'start',
  'scope',
  'request',
  'politeness',
  'canonical',
  'store',
  'rules',
  'url',
  'rule',
  'priority',
  'allow',
  'deny',
  'maxPages',
  'maxDepth',
  'allowPrivate',
  'timeout',
  'userAgent',
  'headers',
  'maxBytes',
  'maxRedirects',
  'robots',
  'retries',
  'attempts',
  'backoff',
  'delay',
  'rateLimit',
  'max',
  'per',
  'perHost',
  'concurrency',
  'sortQuery',
  'stripTrailingSlash',
  'dropParams',
  'onConflict',
  'batchSize',
  'flushInterval',
  'match',
  'follow',
  'items',
  'selector',
  'attr',
  'to',
  'type',
  'key',
  'fields',
  'html',
  'all',
  'trim',
  'regex',
  'required',
  'sitemap',
  'since',
  'alternates',
  '__proto__',
  'constructor',
  'toString',
];

function randomScalar(r: Rng): unknown {
  return weighted<() => unknown>(r, [
    [3, () => pick(r, TOKENS).trim()],
    [2, () => pick(r, KEYS)],
    [2, () => int(r, -5, 100)],
    [1, () => pick(r, [1e308, -1e308, 2 ** 53 + 2, Number.MAX_SAFE_INTEGER, 0.5, -0.0, 1e-320])],
    [1, () => pick(r, ['10s', '500ms', '2m', '1h', '5MB', '512KB', '100000000h', '0', ' 1 s ', '1.5', '4294967296'])],
    [
      1,
      () =>
        pick(r, [
          'http://127.0.0.1:8737/',
          'https://example.com/x',
          'not a url',
          'ftp://x/',
          'http://[::ffff:7f00:1]/',
        ]),
    ],
    [1, () => pick(r, [true, false, null])],
    [1, () => 'x'.repeat(chance(r, 0.1) ? int(r, 20_000, 200_000) : int(r, 100, 5000))],
    [1, () => String.fromCharCode(...Array.from({ length: int(r, 1, 40) }, () => int(r, 0, 0xffff)))],
  ])();
}

function randomValue(r: Rng, depth: number): unknown {
  if (depth > 6 || chance(r, 0.35)) return randomScalar(r);
  if (chance(r, 0.5)) return Array.from({ length: int(r, 0, 5) }, () => randomValue(r, depth + 1));
  const o: Record<string, unknown> = {};
  for (let i = int(r, 0, 6); i > 0; i--) o[pick(r, KEYS)] = randomValue(r, depth + 1);
  return o;
}

/** A task-shaped document: mostly right, with random values in random places. */
function structured(r: Rng): string {
  const doc: Record<string, unknown> = {
    name: chance(r, 0.8) ? 'fuzz' : randomScalar(r),
    start: chance(r, 0.8)
      ? [
          'https://example.com/',
          ...(chance(r, 0.3)
            ? [
                {
                  sitemap: 'https://example.com/robots.txt',
                  since: randomScalar(r),
                  follow: randomValue(r, 2),
                  alternates: randomScalar(r),
                },
              ]
            : []),
        ]
      : randomValue(r, 1),
    rules: chance(r, 0.7)
      ? [
          {
            name: 'a',
            follow: [{ selector: 'a', to: chance(r, 0.5) ? 'a' : randomScalar(r) }],
            items: [{ type: 't', fields: { f: chance(r, 0.5) ? 'h1' : randomValue(r, 3) } }],
          },
        ]
      : randomValue(r, 1),
  };
  for (let i = int(r, 0, 5); i > 0; i--) doc[pick(r, KEYS)] = randomValue(r, 1);
  try {
    return stringify(doc, {
      aliasDuplicateObjects: false,
      lineWidth: chance(r, 0.5) ? 0 : 80,
      defaultStringType: pick(r, ['PLAIN', 'QUOTE_DOUBLE', 'BLOCK_LITERAL'] as const),
    });
  } catch {
    return JSON.stringify(doc) ?? '';
  }
}

function mutate(r: Rng, base: string, others: readonly string[]): string {
  let s = base;
  for (let n = int(r, 1, 8); n > 0; n--) {
    const at = int(r, 0, s.length);
    const len = int(r, 0, Math.min(40, s.length - at));
    s = weighted<() => string>(r, [
      [3, () => s.slice(0, at) + pick(r, TOKENS) + s.slice(at)],
      [2, () => s.slice(0, at) + s.slice(at + len)],
      [1, () => s.slice(0, at) + s.slice(at, at + len).repeat(int(r, 2, 50)) + s.slice(at + len)],
      [
        1,
        () => {
          const lines = s.split('\n');
          const i = int(r, 0, lines.length - 1);
          const j = int(r, 0, lines.length - 1);
          [lines[i], lines[j]] = [lines[j]!, lines[i]!];
          return lines.join('\n');
        },
      ],
      [
        1,
        () => {
          const lines = s.split('\n');
          const i = int(r, 0, lines.length - 1);
          lines[i] = ' '.repeat(int(r, 0, 12)) + lines[i]!.trimStart();
          return lines.join('\n');
        },
      ],
      [
        1,
        () => {
          const other = pick(r, others);
          const o = int(r, 0, other.length);
          return s.slice(0, at) + other.slice(o, o + int(r, 1, 200)) + s.slice(at);
        },
      ],
      [1, () => s.replace(/: ([^\n]+)/, () => `: ${JSON.stringify(randomScalar(r)) ?? 'null'}`)],
    ])();
  }
  return s;
}

/** Hand-shaped attacks on the YAML layer and the validator. */
function hostile(r: Rng): string {
  const depth = pick(r, [50, 500, 2_000, 10_000, 50_000]);
  const big = (lo: number, hi: number) => (chance(r, 0.15) ? int(r, lo, hi) : int(r, 10, Math.max(11, lo)));
  return weighted<() => string>(r, [
    [2, () => `name: x\nstart: ${'['.repeat(depth)}${']'.repeat(chance(r, 0.7) ? depth : 0)}\nrules: [{name: a}]`],
    [2, () => `name: x\nscope: ${'{a: '.repeat(depth)}1${'}'.repeat(depth)}\nstart: [http://a/]\nrules: [{name: a}]`],
    [1, () => Array.from({ length: Math.min(depth, 2000) }, (_, i) => `${' '.repeat(i)}k${i}:`).join('\n')],
    [1, () => Array.from({ length: Math.min(depth, 2000) }, (_, i) => `${'  '.repeat(i)}- `).join('\n') + 'x'],
    [2, () => laughs(r)],
    [1, () => `name: x\nstart: &s [*s]\nrules: &r [{name: a, follow: *r}]`],
    [
      1,
      () =>
        `name: &n x\nstart: [http://a/]\nrules:\n  - &rule {name: a, follow: [{selector: a, to: a}]}\n  - {<<: *rule, name: b}\n  - {<<: [*rule, *rule, *rule], name: c}`,
    ],
    [1, () => `name: x\nstart: [http://a/]\nrules: [{name: a}]\n${'k'.repeat(big(1000, 2_000_000))}: 1`],
    [1, () => `name: x\nstart: ["${'http://a/' + 'p/'.repeat(big(1000, 300_000))}"]\nrules: [{name: a}]`],
    [
      1,
      () =>
        `name: x\nstart: [http://a/]\nrules: [${Array.from({ length: big(1000, 20_000) }, (_, i) => `{name: r${i}, follow: [{selector: a, to: r${i + 1}}]}`).join(',')}]`,
    ],
    [
      1,
      () =>
        `name: x\nstart: [http://a/]\nscope: { allow: [${Array.from({ length: big(100, 5000) }, () => JSON.stringify(pick(r, TOKENS))).join(',')}] }\nrules: [{name: a}]`,
    ],
    [
      1,
      () =>
        `name: x\nstart: [http://a/]\nrules: [{name: a, follow: [{selector: "${':is('.repeat(big(100, 20_000))}a${')'.repeat(big(0, 20_000))}"}]}]`,
    ],
    [
      1,
      () =>
        `name: x\nstart: [http://a/]\nrules: [{name: a, items: [{type: t, fields: {f: {selector: a, regex: "${pick(r, ['(a+)+$', '(?<=a)b', '\\\\', '[', '(?<n>a)\\\\k<n>', 'x{99999999}'])}"}}}]}]`,
    ],
    [
      1,
      () =>
        `name: x\nstart: [http://a/]\nrequest: { timeout: ${pick(r, ['1e400', '4294967296', '99999999999h', '"9999999999999999999999999999999ms"', '-1', '0.0000001'])}, maxBytes: ${pick(r, ['1e400', '99999999999GB', '0.5', '1B'])}, retries: { delay: ${pick(r, ['25d', '9999999h', '2147483648', '1e30'])} } }\npoliteness: { rateLimit: { max: ${pick(r, ['1e400', '0', '1'])}, per: ${pick(r, ['0', '99999999999h', '1ms'])} }, perHost: { concurrency: ${pick(r, ['1e9', '0', '1'])}, delay: ${pick(r, ['99999999999h', '1ms'])} } }\nstore: { flushInterval: ${pick(r, ['99999999999h', '1e30', '0'])}, batchSize: ${pick(r, ['1e12', '0', '1'])} }\nrules: [{name: a}]`,
    ],
    [1, () => '\ufeff' + MINIMAL.replace(/\n/g, pick(r, ['\r\n', '\r', '\n\n', '\u2028', '\u0085']))],
    [1, () => Array.from({ length: int(r, 1, 2000) }, () => String.fromCharCode(int(r, 0, 0xffff))).join('')],
    [1, () => `---\n${MINIMAL}---\n${MINIMAL}...\n%YAML 1.2\n---\n!!binary aGVsbG8=`],
    [1, () => `name: x\nstart: [http://a/]\nrules: [{name: a}]\nstore: { url: "${'${A}'.repeat(big(1, 50_000))}" }`],
  ])();
}

function laughs(r: Rng): string {
  const levels = int(r, 3, 12);
  const width = int(r, 2, 12);
  const lines = [`a0: &a0 [${Array(width).fill('"lol"').join(',')}]`];
  for (let i = 1; i < levels; i++)
    lines.push(
      `a${i}: &a${i} [${Array(width)
        .fill(`*a${i - 1}`)
        .join(',')}]`,
    );
  const top = `*a${levels - 1}`;
  return weighted<() => string>(r, [
    [1, () => `${lines.join('\n')}\nname: x\nstart: [http://a/]\nrules: [{name: a}]`],
    [
      1,
      () =>
        `name: x\nstart: [http://a/]\nrules: [{name: a}]\nscope:\n  allow: &z [${lines.map((l) => l.replace(/^a\d+: /, '')).join(', ')}]\n  deny: ${top}`,
    ],
    [
      1,
      () =>
        `${lines.map((l) => `${l.replace(/\[.*$/, '')}{${Array.from({ length: width }, (_, k) => `k${k}: ${l.startsWith('a0') ? '1' : `*a${Number(/^a(\d+)/.exec(l)![1]) - 1}`}`).join(', ')}}`).join('\n')}\nname: x\nstart: [http://a/]\nrules: [{name: a, items: [{type: t, fields: ${top}}]}]`,
    ],
  ])();
}

export function taskInput(r: Rng): string {
  const base = corpus();
  return weighted<() => string>(r, [
    [5, () => mutate(r, pick(r, base), base)],
    [3, () => structured(r)],
    [3, () => hostile(r)],
  ])();
}
