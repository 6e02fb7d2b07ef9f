// Where a profiled crawl's CPU goes, per page (issue 36): each sample of a V8 .cpuprofile goes to the first
// category its stack matches, so a socket write under BullMQ counts as BullMQ, not as ioredis or libuv.
//   node bench/lib/breakdown.mjs PAGES FILE.cpuprofile...
import { readFileSync } from 'node:fs';
import { SourceMap } from 'node:module';
import { fileURLToPath } from 'node:url';

const CATEGORIES = [
  [
    'copies between threads (postMessage, structured clone)',
    (leaf) => /postMessage|deserialize|serialize/i.test(leaf.callFrame.functionName) && !leaf.callFrame.url,
  ],
  [
    'JSON (stringify, parse)',
    (leaf) => !leaf.callFrame.url && /^(stringify|parse|JSONSerialize|JSONParse)$/.test(leaf.callFrame.functionName),
  ],
  [
    'store writer (SQLite, history)',
    (_, areas) => areas.has('node-sqlite3-wasm') || [...areas].some((a) => a.startsWith('src/store')),
  ],
  [
    'parse + extract + link rules (htmlparser2, selectors, URLs)',
    (_, areas) =>
      [
        'htmlparser2',
        'domhandler',
        'cheerio',
        'css-select',
        'css-what',
        'nth-check',
        'domutils',
        're2js',
        'entities',
      ].some((a) => areas.has(a)) || [...areas].some((a) => /^src\/core\/(extract|url|pipeline)/.test(a)),
  ],
  ['BullMQ client (job fetch, lock renewal, complete, events)', (_, areas) => areas.has('bullmq')],
  ['frontier scripts, client side (finishPage, politeness)', (_, areas) => areas.has('src/frontier')],
  [
    'fetch (undici, content decoding, charset)',
    (_, areas) => ['undici', 'encoding-sniffer', 'iconv-lite', 'zlib', 'string_decoder'].some((a) => areas.has(a)),
  ],
  ['other Redis client (ioredis: counters, progress, stream)', (_, areas) => areas.has('ioredis')],
  ['garbage collector', (leaf) => leaf.callFrame.functionName === '(garbage collector)'],
  [
    'start-up, compile, (program)',
    (leaf, areas) =>
      leaf.callFrame.functionName === '(program)' ||
      areas.has('vm') ||
      areas.has('internal/bootstrap') ||
      leaf.callFrame.functionName === 'createCachedData' ||
      [...areas].some((a) => a.startsWith('internal/modules')),
  ],
];

export function breakdown(file) {
  const prof = JSON.parse(readFileSync(file, 'utf8'));
  const maps = new Map();
  const mapFor = (url) => {
    if (!maps.has(url)) {
      try {
        maps.set(
          url,
          new SourceMap(
            JSON.parse(readFileSync(`${url.startsWith('file://') ? fileURLToPath(url) : url}.map`, 'utf8')),
          ),
        );
      } catch {
        maps.set(url, null);
      }
    }
    return maps.get(url);
  };
  const areaCache = new Map();
  const area = (n) => {
    if (areaCache.has(n.id)) return areaCache.get(n.id);
    const cf = n.callFrame;
    let a;
    if (!cf.url) a = cf.functionName;
    else if (cf.url.startsWith('node:internal/deps/')) a = cf.url.slice(19).split('/')[0];
    else if (cf.url.startsWith('node:')) a = cf.url.slice(5).split('/').slice(0, 2).join('/');
    else {
      const m = cf.url.endsWith('.js') ? mapFor(cf.url) : null;
      const e = m?.findEntry(cf.lineNumber, cf.columnNumber);
      const src = e?.originalSource ?? cf.url;
      const nm = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(src);
      const s = /\/src\/(.+)\/[^/]+$/.exec(src);
      a = nm ? nm[1] : s ? `src/${s[1]}` : src.split('/').slice(-2).join('/');
    }
    areaCache.set(n.id, a);
    return a;
  };
  const parent = new Map();
  for (const n of prof.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const byId = new Map(prof.nodes.map((n) => [n.id, n]));
  const dt = new Map();
  prof.samples.forEach((s, i) => dt.set(s, (dt.get(s) ?? 0) + (prof.timeDeltas[i] ?? 0)));
  const out = new Map();
  let busy = 0;
  for (const [id, us] of dt) {
    const leaf = byId.get(id);
    if (leaf.callFrame.functionName === '(idle)') continue;
    busy += us;
    const areas = new Set();
    for (let p = id; p !== undefined; p = parent.get(p)) areas.add(area(byId.get(p)));
    const cat = CATEGORIES.find(([, test]) => test(leaf, areas))?.[0] ?? 'other';
    out.set(cat, (out.get(cat) ?? 0) + us);
  }
  return { busyUs: busy, categories: out };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const pages = Number(process.argv[2]);
  for (const f of process.argv.slice(3)) {
    const { busyUs, categories } = breakdown(f);
    console.log(`\n${f}: ${(busyUs / 1000).toFixed(0)} ms busy, ${(busyUs / pages).toFixed(0)} µs/page`);
    for (const [k, v] of [...categories].sort((a, b) => b[1] - a[1]))
      console.log(
        `  ${k.padEnd(62)} ${(v / pages).toFixed(0).padStart(5)} µs/page  ${((v / busyUs) * 100).toFixed(0).padStart(3)}%`,
      );
  }
}
