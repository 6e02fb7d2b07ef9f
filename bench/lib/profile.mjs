// Summarises a V8 .cpuprofile of a bundled program: self time per source area (a node_modules package or a
// folder of the repository's src/), mapped back through the bundle's source map, plus the top functions.
import { readFileSync } from 'node:fs';
import { SourceMap } from 'node:module';
import { fileURLToPath } from 'node:url';

export function summariseProfile(file, { top = 15 } = {}) {
  const prof = JSON.parse(readFileSync(file, 'utf8'));
  const maps = new Map();
  const mapFor = (url) => {
    if (!url || !url.endsWith('.js')) return null;
    if (!maps.has(url)) {
      try {
        const path = url.startsWith('file://') ? fileURLToPath(url) : url;
        maps.set(url, new SourceMap(JSON.parse(readFileSync(`${path}.map`, 'utf8'))));
      } catch {
        maps.set(url, null);
      }
    }
    return maps.get(url);
  };
  const area = (node) => {
    const cf = node.callFrame;
    if (!cf.url)
      return cf.functionName === '(garbage collector)'
        ? '(gc)'
        : cf.functionName === '(idle)'
          ? '(idle)'
          : cf.functionName || '(native)';
    if (cf.url.startsWith('node:internal/deps/')) return cf.url.slice('node:internal/deps/'.length).split('/')[0];
    if (cf.url.startsWith('node:')) return cf.url.slice(5).split('/').slice(0, 2).join('/');
    const m = mapFor(cf.url);
    let src = cf.url;
    if (m) {
      const e = m.findEntry(cf.lineNumber, cf.columnNumber);
      if (e && e.originalSource) src = e.originalSource;
    }
    const nm = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(src);
    if (nm) return nm[1];
    const s = /\/src\/(.+)\/[^/]+$/.exec(src);
    if (s) return `src/${s[1]}`;
    return src.split('/').slice(-2).join('/');
  };
  const dt = new Map();
  const times = prof.timeDeltas;
  const samples = prof.samples;
  for (let i = 0; i < samples.length; i++) dt.set(samples[i], (dt.get(samples[i]) ?? 0) + (times[i] ?? 0));
  const byArea = new Map();
  const byFn = new Map();
  let total = 0;
  let idle = 0;
  for (const node of prof.nodes) {
    const us = dt.get(node.id) ?? 0;
    if (!us) continue;
    const a = area(node);
    if (a === '(idle)') {
      idle += us;
      continue;
    }
    total += us;
    byArea.set(a, (byArea.get(a) ?? 0) + us);
    const fn = `${node.callFrame.functionName || '(anonymous)'} [${a}]`;
    byFn.set(fn, (byFn.get(fn) ?? 0) + us);
  }
  // Inclusive time per function (each function counted once per stack), for the engine's own code and the
  // entry points of its libraries: where a page's time goes, top-down.
  const parent = new Map();
  for (const node of prof.nodes) for (const c of node.children ?? []) parent.set(c, node.id);
  const byId = new Map(prof.nodes.map((n) => [n.id, n]));
  const incl = new Map();
  for (const node of prof.nodes) {
    const us = dt.get(node.id) ?? 0;
    if (!us || node.callFrame.functionName === '(idle)') continue;
    const seen = new Set();
    for (let id = node.id; id !== undefined; id = parent.get(id)) {
      const n = byId.get(id);
      const a = area(n);
      if (
        !a.startsWith('src/') &&
        !['bullmq', 'ioredis', 'undici', 'cheerio', 'htmlparser2', 'css-select', 'node-sqlite3-wasm'].includes(a)
      )
        continue;
      const fn = `${n.callFrame.functionName || '(anonymous)'} [${a}]`;
      if (seen.has(fn)) continue;
      seen.add(fn);
      incl.set(fn, (incl.get(fn) ?? 0) + us);
    }
  }
  const sort = (m) =>
    [...m.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([k, v]) => ({ name: k, ms: v / 1000, share: v / total }));
  return {
    busyMs: total / 1000,
    idleMs: idle / 1000,
    areas: sort(byArea),
    functions: sort(byFn),
    inclusive: [...incl.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 40)
      .map(([k, v]) => ({ name: k, ms: v / 1000, share: v / total })),
  };
}
