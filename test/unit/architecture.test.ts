import { strict as assert } from 'node:assert';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { envReads, importCycles, importEdges, roomOf, type ImportEdge } from '../support/importGraph';

// The house rules of docs/architecture.md, checked on src/ at every `npm test`: no import cycles, `vscode` only in
// src/extension, src/core pure (no I/O modules, no network or database clients, no process.env: values come in
// from the edges), each room importing only the rooms below it, and media/ (webview code) taking from src/ only
// the protocol types it shares with the extension. The same checks run on a small tree with one deliberate violation of each, so a rule that
// can no longer fail is seen.

const root = join(__dirname, '..', '..', '..');

/** Which rooms each room may import. Lower rooms never import higher ones; the front ends never import each other. */
export const ROOMS: Readonly<Record<string, readonly string[]>> = {
  core: [],
  redis: ['core'],
  frontier: ['core', 'redis'],
  store: ['core', 'redis', 'frontier'],
  observe: ['core', 'redis', 'frontier'],
  workspace: ['core'],
  demo: ['core'],
  worker: ['core', 'redis', 'frontier', 'store', 'observe', 'workspace'],
  run: ['core', 'redis', 'frontier', 'store', 'observe', 'workspace', 'worker'],
  // The web monitor: read-models and the actions' functions below it; task files (an action's task) by workspace.
  monitor: ['core', 'redis', 'frontier', 'store', 'observe', 'workspace'],
  cli: ['core', 'redis', 'frontier', 'store', 'observe', 'workspace', 'worker', 'run', 'demo', 'monitor'],
  api: ['core', 'redis', 'frontier', 'store', 'observe', 'workspace', 'worker', 'run'],
  extension: ['core', 'redis', 'frontier', 'store', 'observe', 'workspace', 'worker', 'run', 'demo'],
};

/**
 * What src/core may take from Node: computation only. `node:net` for `isIP` alone (a pure parser of address
 * literals, which is what the private-address rule needs; the rest of node:net is sockets).
 */
const CORE_NODE: Readonly<Record<string, readonly string[] | 'all'>> = {
  'node:crypto': 'all',
  'node:path': 'all',
  'node:url': 'all',
  'node:net': ['isIP', 'isIPv4', 'isIPv6'],
};
/** Packages that do I/O: the network, Redis, databases, processes. Never in src/core. */
const IO_PACKAGES = ['undici', 'ioredis', 'bullmq', 'pg', 'playwright-core', 'vscode'];

const NODE_BUILTINS = new Set(builtinModules);
const isNodeBuiltin = (spec: string) => spec.startsWith('node:') || NODE_BUILTINS.has(spec.split('/')[0]!);
const packageOf = (spec: string) =>
  spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]!;
const where = (e: ImportEdge) => `src/${e.from}:${e.line} imports '${e.spec}'`;

export function violations(edges: readonly ImportEdge[]): string[] {
  const out: string[] = [];
  for (const cycle of importCycles(edges)) out.push(`import cycle: ${cycle.map((f) => `src/${f}`).join(' -> ')}`);
  for (const e of edges) {
    const room = roomOf(e.from);
    if (packageOf(e.spec) === 'vscode' && room !== 'extension')
      out.push(`${where(e)}: only src/extension talks to VS Code`);
    if (room === 'core' && !e.spec.startsWith('.')) {
      if (isNodeBuiltin(e.spec)) {
        const allowed = CORE_NODE[e.spec.startsWith('node:') ? e.spec : `node:${e.spec}`];
        const ok = allowed === 'all' || (!!allowed && !!e.names && e.names.every((n) => allowed.includes(n)));
        if (!ok)
          out.push(
            `${where(e)}: src/core does no I/O (allowed from Node: ${Object.keys(CORE_NODE).join(', ')}, node:net's isIP)`,
          );
      } else if (IO_PACKAGES.includes(packageOf(e.spec))) out.push(`${where(e)}: src/core does no I/O`);
    }
    if (e.to) {
      const target = roomOf(e.to);
      if (target !== room && room in ROOMS && !ROOMS[room]!.includes(target)) {
        out.push(
          `${where(e)}: ${room} may import ${ROOMS[room]!.join(', ') || 'nothing outside itself'}, not ${target || 'the top of src'}`,
        );
      }
    }
  }
  return out;
}

/** Where src/core reads process.env: it must not (the front ends pass what they read in). */
export function coreEnvViolations(srcRoot: string): string[] {
  return envReads(srcRoot)
    .filter((r) => roomOf(r.file) === 'core')
    .map(
      (r) =>
        `src/${r.file}:${r.line} reads process.env: src/core takes its environment as an argument (from workspace/taskFile.ts, or the caller)`,
    );
}

/**
 * The modules of src/ that media/ may import: the webviews' message types (`protocol.ts`), shared with the
 * extension and the designer. The monitor page's types come from monitor/views.ts, as types only (that module
 * reads Redis).
 */
const MEDIA_PROTOCOL = [/^extension\/[^/]+\/protocol\.ts$/, /^core\/designer\/protocol\.ts$/];
const MEDIA_TYPES_ONLY = [/^monitor\/views\.ts$/];

/**
 * media/'s imports (`mediaEdges`, read from mediaRoot) and the protocol modules' own (`srcEdges`): a webview bundle
 * holds nothing of src/ but protocol types, and no Node or I/O module; a view (media/<view>/) takes from its own
 * folder and from media/shared/ (the DOM helpers and formatters every view bundles), and shared/ from no view.
 */
export function mediaViolations(
  mediaEdges: readonly ImportEdge[],
  mediaRoot: string,
  srcRoot: string,
  srcEdges: readonly ImportEdge[],
): string[] {
  const out: string[] = [];
  const at = (e: ImportEdge) => `media/${e.from}:${e.line} imports '${e.spec}'`;
  for (const e of mediaEdges) {
    if (isNodeBuiltin(e.spec) || IO_PACKAGES.includes(packageOf(e.spec)))
      out.push(`${at(e)}: webview code runs in a browser, with no Node or I/O module`);
    if (!e.spec.startsWith('.')) continue;
    const inMedia = relative(mediaRoot, resolve(mediaRoot, dirname(e.from), e.spec))
      .split(sep)
      .join('/');
    const [fromFolder] = e.from.split(/[\\/]/);
    const [toFolder] = inMedia.split('/');
    if (!inMedia.startsWith('..') && toFolder !== fromFolder && toFolder !== 'shared')
      out.push(`${at(e)}: a view takes from its own folder and media/shared/ only (code two views need goes there)`);
    const inSrc = relative(srcRoot, resolve(mediaRoot, dirname(e.from), e.spec))
      .split(sep)
      .join('/');
    if (inSrc.startsWith('..')) continue;
    const file = inSrc.endsWith('.ts') ? inSrc : `${inSrc}.ts`;
    if (MEDIA_PROTOCOL.some((r) => r.test(file))) continue;
    if (MEDIA_TYPES_ONLY.some((r) => r.test(file)) && e.typeOnly) continue;
    out.push(
      `${at(e)}: media/ takes from src/ only protocol types (src/extension/*/protocol.ts, src/core/designer/protocol.ts, types of src/monitor/views.ts)`,
    );
  }
  for (const e of srcEdges) {
    if (MEDIA_PROTOCOL.some((r) => r.test(e.from)) && !e.typeOnly)
      out.push(`${where(e)}: a protocol module is bundled into the webviews, so it imports types only`);
  }
  return out;
}

describe('architecture (docs/architecture.md)', () => {
  it('src/ keeps the house rules: no cycles, vscode only in the extension, a pure core, rooms importing downwards', () => {
    const edges = importEdges(join(root, 'src'));
    assert.ok(edges.length > 300, `read only ${edges.length} imports from src/: is the parser seeing the files?`);
    const rooms = new Set(edges.map((e) => roomOf(e.from)));
    for (const r of rooms)
      assert.ok(r in ROOMS, `src/${r}/ is a room the rules do not know: add it to ROOMS and to docs/architecture.md`);
    assert.deepEqual(violations(edges), []);
  });

  it('src/core reads no process.env', () => {
    assert.deepEqual(coreEnvViolations(join(root, 'src')), []);
  });

  it('media/ takes only protocol types from src/', () => {
    const mediaEdges = importEdges(join(root, 'media'));
    assert.ok(
      mediaEdges.some((e) => /protocol$/.test(e.spec)),
      `read no protocol import from media/: is the parser seeing the webview files?`,
    );
    assert.deepEqual(
      mediaViolations(mediaEdges, join(root, 'media'), join(root, 'src'), importEdges(join(root, 'src'))),
      [],
    );
  });

  describe('the checks fail on a deliberate violation', () => {
    let dir: string;
    const tree = (files: Record<string, string>) => {
      dir = mkdtempSync(join(tmpdir(), 'crawl-arch-'));
      for (const [p, text] of Object.entries(files)) {
        mkdirSync(dirname(join(dir, p)), { recursive: true });
        writeFileSync(join(dir, p), text);
      }
      return violations(importEdges(dir));
    };
    afterEach(() => rmSync(dir, { recursive: true, force: true }));

    it('a cycle, even through types only', () => {
      const v = tree({
        'extension/extension.ts': "import { open } from './results/panel';\nexport interface Api { n: number }\n",
        'extension/results/panel.ts': "import type { Api } from '../extension';\nexport const open = (a?: Api) => a;\n",
      });
      assert.deepEqual(v, [
        'import cycle: src/extension/extension.ts -> src/extension/results/panel.ts -> src/extension/extension.ts',
      ]);
    });

    it('a cycle through a lazy import()', () => {
      const v = tree({
        'run/a.ts': "export const b = () => import('./b');\n",
        'run/b.ts': "import { b } from './a';\nexport { b };\n",
      });
      assert.equal(v.length, 1);
      assert.match(v[0]!, /^import cycle: src\/run\/a\.ts -> src\/run\/b\.ts -> src\/run\/a\.ts$/);
    });

    it('vscode outside src/extension', () => {
      assert.deepEqual(tree({ 'run/x.ts': "import * as vscode from 'vscode';\nexport const w = vscode.window;\n" }), [
        "src/run/x.ts:1 imports 'vscode': only src/extension talks to VS Code",
      ]);
    });

    it('src/core reading files, opening sockets or talking to Redis', () => {
      const v = tree({
        'core/a.ts': "import { readFile } from 'node:fs/promises';\nexport { readFile };\n",
        'core/b.ts':
          "import { connect } from 'node:net';\nimport { isIP } from 'node:net';\nexport { connect, isIP };\n",
        'core/c.ts':
          "import IORedis from 'ioredis';\nimport { createHash } from 'node:crypto';\nexport { IORedis, createHash };\n",
        'core/d.ts': "import * as os from 'os';\nexport { os };\n",
      });
      assert.deepEqual(
        v.map((x) => x.replace(/:.*? imports '([^']+)'.*$/, ' $1')),
        ['src/core/a.ts node:fs/promises', 'src/core/b.ts node:net', 'src/core/c.ts ioredis', 'src/core/d.ts os'],
      );
    });

    it('a lower room importing a higher one', () => {
      const v = tree({
        'core/model.ts': "import { q } from '../frontier/crawl';\nexport { q };\n",
        'frontier/crawl.ts': 'export const q = 1;\n',
      });
      assert.deepEqual(v, [
        "src/core/model.ts:1 imports '../frontier/crawl': core may import nothing outside itself, not frontier",
      ]);
    });
  });
});

describe('architecture: the environment and media/ rules fail on a deliberate violation', () => {
  const dirs: string[] = [];
  const tree = (files: Record<string, string>) => {
    const base = mkdtempSync(join(tmpdir(), 'crawl-arch-'));
    dirs.push(base);
    for (const [p, text] of Object.entries(files)) {
      mkdirSync(dirname(join(base, p)), { recursive: true });
      writeFileSync(join(base, p), text);
    }
    return base;
  };
  after(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

  it('src/core reading process.env', () => {
    const dir = tree({
      'core/a.ts': 'export const home = () => process.env.HOME;\n',
      'core/b.ts': '// process.env in a comment is no read\nexport const b = 1;\n',
      'run/c.ts': 'export const c = process.env.X;\n',
    });
    assert.deepEqual(
      coreEnvViolations(dir).map((v) => v.replace(/ reads.*$/, '')),
      ['src/core/a.ts:1'],
    );
  });

  it('media/ importing more of src/ than protocol types', () => {
    const files: Record<string, string> = {
      'src/extension/results/protocol.ts': "import { PAGE } from '../../core/units';\nexport const PAGE_SIZE = PAGE;\n",
      'src/core/units.ts': 'export const PAGE = 100;\n',
      'src/monitor/views.ts': 'export interface TaskView { n: number }\nexport const readViews = () => 1;\n',
      'media/results/main.ts':
        "import { PAGE_SIZE } from '../../src/extension/results/protocol';\nimport { PAGE } from '../../src/core/units';\nexport { PAGE_SIZE, PAGE };\n",
      'media/monitor/main.ts':
        "import type { TaskView } from '../../src/monitor/views';\nimport { readViews } from '../../src/monitor/views';\nimport { readFileSync } from 'node:fs';\nexport type { TaskView };\nexport { readViews, readFileSync };\n",
      // Code two views need lives in media/shared/; a view reaching into another's folder, or shared/ into a view's, is refused.
      'media/shared/dom.ts': "import { PAGE_SIZE } from '../results/main';\nexport const n = PAGE_SIZE;\n",
      'media/dashboard/main.ts':
        "import { n } from '../shared/dom';\nimport { PAGE } from '../results/main';\nimport { m } from './parts';\nexport { n, m, PAGE };\n",
      'media/dashboard/parts.ts': 'export const m = 1;\n',
    };
    const base = tree(files);
    const v = mediaViolations(
      importEdges(join(base, 'media')),
      join(base, 'media'),
      join(base, 'src'),
      importEdges(join(base, 'src')),
    );
    assert.deepEqual(v.map((x) => x.replace(/ imports '[^']+'/, '').replace(/:[^:]*$/, '')).sort(), [
      'media/dashboard/main.ts:2',
      'media/monitor/main.ts:2',
      'media/monitor/main.ts:3',
      'media/results/main.ts:2',
      'media/shared/dom.ts:1',
      'src/extension/results/protocol.ts:1',
    ]);
  });
});
