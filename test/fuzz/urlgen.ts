import { chance, int, pick, weighted, type Rng } from './rng';

// Hostile links as a page could write them: odd schemes and separators, credentials, every spelling of
// loopback and private addresses, IDNs, odd ports, very long URLs, and relative forms that escape the host.

const SCHEMES = [
  'http',
  'https',
  'HTTP',
  'hTtPs',
  'javascript',
  'JaVaScRiPt',
  'java\tscript',
  'java\nscript',
  ' javascript',
  'data',
  'file',
  'ftp',
  'ws',
  'wss',
  'blob',
  'about',
  'mailto',
  'tel',
  'gopher',
  'view-source',
  'chrome',
  'vbscript',
  '\u0000http',
  'http\u0000',
];
const SEPARATORS = ['://', ':/', ':', ':///', ':\\\\', ':/\\', ':\\/', '://\t', ': //', ':////'];
const CREDENTIALS = ['', '', '', 'user@', 'user:pass@', ':@', '@', 'a%40b@', 'evil.com@', 'example.com:80@', 'u:p%00@'];
const PRIVATE_HOSTS = [
  'localhost',
  'LOCALHOST',
  'localhost.',
  'a.localhost',
  'x.y.localhost.',
  '127.0.0.1',
  '127.1',
  '127.0.1',
  '0x7f.1',
  '0x7f000001',
  '2130706433',
  '017700000001',
  '0177.0.0.1',
  '127.000.000.001',
  '0',
  '0.0.0.0',
  '10.0.0.1',
  '10.255.255.255',
  '172.16.0.1',
  '172.31.255.255',
  '192.168.0.1',
  '169.254.169.254',
  '100.64.0.1',
  '198.18.0.1',
  '224.0.0.1',
  '255.255.255.255',
  '[::1]',
  '[::]',
  '[0:0:0:0:0:0:0:1]',
  '[::ffff:127.0.0.1]',
  '[::ffff:7f00:1]',
  '[::ffff:a9fe:a9fe]',
  '[::ffff:10.0.0.1]',
  '[::7f00:1]',
  '[fe80::1]',
  '[fe80::1%25eth0]',
  '[fd00::1]',
  '[fc00::]',
  '[fec0::1]',
  '[ff02::1]',
  '[64:ff9b::7f00:1]',
  '[2002:7f00:1::]',
  '[::ffff:0:7f00:1]',
  '127.0.0.1.',
  '%31%32%37.0.0.1',
  '127%2e0%2e0%2e1',
  '１２７.０.０.１',
  'ⓛⓞⓒⓐⓛⓗⓞⓢⓣ',
  'localhost%00.example.com',
];
const PUBLIC_HOSTS = [
  'example.com',
  'EXAMPLE.COM',
  'example.com.',
  'www.example.com',
  'sub.example.org',
  'evil.com',
  'example.com.evil.com',
  'bücher.example',
  'xn--bcher-kva.example',
  'xn--invalid-.example',
  'ex%61mple.com',
  '8.8.8.8',
  '[2606:4700::1111]',
  '[::ffff:808:808]',
  'a'.repeat(63) + '.com',
  'a'.repeat(300) + '.com',
  'exa mple.com',
  'exam\tple.com',
  'example..com',
  '.example.com',
  '例え.テスト',
  'ÉXAMPLE.com',
  'example.com\\evil.com',
  'evil.com#@example.com',
  'evil.com?@example.com',
  'xn--',
];
const PORTS = [
  '',
  '',
  '',
  ':80',
  ':443',
  ':8080',
  ':0',
  ':1',
  ':65535',
  ':65536',
  ':99999',
  ':-1',
  ':',
  ':080',
  ':8737',
  ':6379',
  ': 80',
  ':0x50',
  ':4294967377',
];
const SEGMENTS = [
  'a',
  'b',
  '..',
  '.',
  '%2e%2e',
  '%2E',
  '.%2e',
  '%2f',
  '%252f',
  '%00',
  '%zz',
  '%',
  'é',
  '%C3%A9',
  '東京',
  '~user',
  '%7e',
  ';p=1',
  "!$&'()*+,;=",
  ' ',
  '\t',
  '\\',
  '//',
  'index.html',
  '%u0041',
];
const PARAMS = ['utm_source', 'utm_', 'ref', 'REF', 'src', 'a', 'b', '%61', 'a%20b', '', '=', '&', 'x[]'];

function host(r: Rng, startHost: string): string {
  return weighted<() => string>(r, [
    [3, () => startHost],
    [1, () => startHost.toUpperCase()],
    [3, () => pick(r, PRIVATE_HOSTS)],
    [3, () => pick(r, PUBLIC_HOSTS)],
  ])();
}

function path(r: Rng): string {
  const n = weighted(r, [
    [6, int(r, 0, 6)],
    [1, int(r, 50, 3000)],
  ]);
  let p = '';
  for (let i = 0; i < n; i++) p += '/' + (chance(r, 0.7) ? pick(r, SEGMENTS) : String.fromCharCode(int(r, 0, 0xffff)));
  return p;
}

function query(r: Rng): string {
  if (chance(r, 0.5)) return '';
  const n = int(r, 0, chance(r, 0.1) ? 500 : 6);
  const parts = Array.from(
    { length: n },
    () => `${pick(r, PARAMS)}${chance(r, 0.8) ? '=' + pick(r, [...PARAMS, ...SEGMENTS]) : ''}`,
  );
  return '?' + parts.join(pick(r, ['&', '&', '&amp;', ';', '&&']));
}

export function hostileHref(r: Rng, startHost: string): string {
  return weighted<() => string>(r, [
    [
      6,
      () =>
        `${pick(r, SCHEMES.slice(0, 4))}${pick(r, ['://', '://', '://', ...SEPARATORS])}${pick(r, CREDENTIALS)}${host(r, startHost)}${pick(r, PORTS)}${path(r)}${query(r)}${chance(r, 0.2) ? '#' + pick(r, SEGMENTS) : ''}`,
    ],
    [
      2,
      () =>
        `${pick(r, SCHEMES)}${pick(r, SEPARATORS)}${pick(r, CREDENTIALS)}${host(r, startHost)}${pick(r, PORTS)}${path(r)}`,
    ],
    [
      1,
      () =>
        pick(r, [
          'javascript:alert(1)',
          'javascript://example.com/%0aalert(1)',
          'data:text/html;base64,PHNjcmlwdD4=',
          'file:///etc/passwd',
          'file://localhost/etc/passwd',
          'about:blank',
          'blob:http://example.com/uuid',
          'mailto:a@b.c',
          'tel:+1',
        ]),
    ],
    [
      3,
      () =>
        `${pick(r, ['//', '\\\\', '/\\', '\\/', '///', '/', '', './', '../', '?', '#', 'https:', 'http:/', 'http:\\\\', '\t//', ' //'])}${chance(r, 0.6) ? pick(r, CREDENTIALS) + host(r, startHost) + pick(r, PORTS) : ''}${path(r)}${query(r)}`,
    ],
    [1, () => `http://${startHost}/${'a'.repeat(int(r, 1900, 2100))}`],
    [1, () => `http://${startHost}/?${'x='.repeat(int(r, 1000, 50_000))}`],
    [1, () => Array.from({ length: int(r, 0, 80) }, () => String.fromCharCode(int(r, 0, 0x2fff))).join('')],
  ])();
}
