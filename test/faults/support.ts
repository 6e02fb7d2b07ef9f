import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Redis } from '../../src/redis/connect';
import { allBooks, expectedPages, renderPage, serveSite, type SiteOptions, type SiteServer } from '../../src/demo/site';
import { loadTaskFile } from '../../src/workspace/taskFile';
import type { CrawlTask } from '../../src/core/task/model';
import { CrawlQueue } from '../../src/frontier/crawl';
import type { CrawlStats } from '../../src/frontier/types';
import { connectRedis } from '../../src/redis/connect';
import { SqliteStore } from '../../src/store/sqlite';
import { loadSqlite } from '../../src/store/sqliteDriver';
import { CrawlSession, type SessionOptions } from '../../src/run/session';
import { bookTask } from '../support/crawl';

// The fault-injection suite's shared parts: a bookshop of a few thousand pages with faults injected by
// middleware, task files with a real SQLite store, the checks every scenario ends with (each reachable page
// fetched or failed with a reason, each item stored exactly once), and the summary table.

export const WORKER_SCRIPT = resolve('dist/worker.js');
export const CLI_SCRIPT = resolve('dist/cli.js');

/** ~2,000 pages: 40 list pages of 50 books, the home and about pages. */
export const SITE: SiteOptions = { listPages: 40, perPage: 50, filler: 1 };
/** The opt-in soak: five times the pages, so every fault lands many times more. */
export const SOAK = process.env.CS_FAULTS_SOAK === '1';
export const SITE_SIZE: SiteOptions = SOAK ? { listPages: 100, perPage: 100, filler: 1 } : SITE;

// ---------------------------------------------------------------------------------------------------------
// Processes: everything a scenario starts is registered here and killed at the end, even when it fails.

const started = new Set<ChildProcess>();
export function track(child: ChildProcess): ChildProcess {
  started.add(child);
  child.once('exit', () => started.delete(child));
  return child;
}
export async function killAllTracked(): Promise<void> {
  for (const c of started) {
    if (c.exitCode === null && c.signalCode === null) {
      try {
        c.kill('SIGCONT');
        c.kill('SIGKILL');
      } catch {
        // already gone
      }
    }
  }
  started.clear();
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** For waitUntil's context: the last lines a spawned program printed. */
export function tail(program: { lines: string[] }, n = 15): () => string {
  return () => `last lines of the program:\n${program.lines.slice(-n).join('\n')}`;
}

/**
 * `child`'s exit code once it has exited: at once if it already has (a listener added after the 'exit' event would
 * wait forever: a CLI stopped by its first Ctrl-C can be gone before the test sends the second), else when it
 * does; after `timeoutMs`, an error that ends with `context()`.
 */
export function exitOf(child: ChildProcess, timeoutMs: number, context?: () => string): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve, reject) => {
    const t = setTimeout(
      () =>
        reject(new Error(`process ${child.pid} still running after ${timeoutMs} ms${context ? `; ${context()}` : ''}`)),
      timeoutMs,
    );
    child.once('exit', (code) => {
      clearTimeout(t);
      resolve(code);
    });
  });
}

/** Polls `cond` until it holds; on timeout the error ends with `context()` (e.g. the last lines of a CLI's output). */
export async function waitUntil(
  what: string,
  cond: () => boolean | Promise<boolean>,
  timeoutMs: number,
  everyMs = 50,
  context?: () => string,
): Promise<number> {
  const t0 = Date.now();
  while (!(await cond())) {
    if (Date.now() - t0 > timeoutMs)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${context ? `; ${context()}` : ''}`);
    await sleep(everyMs);
  }
  return Date.now() - t0;
}

// ---------------------------------------------------------------------------------------------------------
// Task files

export interface TaskOptions {
  readonly timeout?: string;
  readonly attempts?: number;
  readonly delay?: string;
  readonly extra?: string;
}

export function taskYaml(siteUrl: string, name: string, storePath: string, o: TaskOptions = {}): string {
  return bookTask(
    siteUrl,
    name,
    `politeness: { perHost: { concurrency: 32 } }\nstore: { url: "sqlite:${storePath}", batchSize: 200, flushInterval: 100ms }\n${o.extra ?? ''}`,
    {
      request: `{ timeout: ${o.timeout ?? '5s'}, retries: { attempts: ${o.attempts ?? 4}, backoff: fixed, delay: ${o.delay ?? '200ms'} } }`,
      hostile: true,
    },
  );
}

export interface Scene {
  readonly dir: string;
  readonly storePath: string;
  readonly taskFile: string;
  readonly task: CrawlTask;
}

/** A temp folder with the task file; the store is a SQLite file in it. */
export async function makeScene(siteUrl: string, name: string, o: TaskOptions = {}): Promise<Scene> {
  const dir = mkdtempSync(join(tmpdir(), `cs-fault-${name}-`));
  const storePath = join(dir, 'items.sqlite');
  const taskFile = join(dir, `${name}.crawl.yaml`);
  writeFileSync(taskFile, taskYaml(siteUrl, name, storePath, o));
  return { dir, storePath, taskFile, task: await loadTaskFile(taskFile) };
}

export function removeScene(scene: Scene | undefined): void {
  if (scene) rmSync(scene.dir, { recursive: true, force: true });
}

export function faultSession(scene: Scene, redisUrl: string, extra: Partial<SessionOptions> = {}): CrawlSession {
  return new CrawlSession({
    task: scene.task,
    redisUrl,
    workers: 2,
    concurrency: 8,
    workerScript: WORKER_SCRIPT,
    fresh: true,
    // Short locks: a dead worker's pages go back to the queue within about 3 s.
    lockDurationMs: 2_000,
    stalledIntervalMs: 1_000,
    restartOnCrash: true,
    pollMs: 200,
    ...extra,
  });
}

/**
 * Which of `pids` holds the client end of the TCP connection a request came in on (Linux /proc): how a test server
 * knows which worker process asked. Null if none of them does.
 */
export function processOfRequest(req: IncomingMessage, pids: readonly number[]): number | null {
  const hex = (port: number) => port.toString(16).toUpperCase().padStart(4, '0');
  const client = `:${hex(req.socket.remotePort!)}`;
  const server = `:${hex(req.socket.localPort!)}`;
  let inode: string | null = null;
  for (const line of readFileSync('/proc/net/tcp', 'utf8').split('\n').slice(1)) {
    const f = line.trim().split(/\s+/);
    if (f[1]?.endsWith(client) && f[2]?.endsWith(server)) inode = f[9]!;
  }
  if (!inode) return null;
  const target = `socket:[${inode}]`;
  for (const pid of pids) {
    try {
      for (const fd of readdirSync(`/proc/${pid}/fd`)) {
        try {
          if (readlinkSync(`/proc/${pid}/fd/${fd}`) === target) return pid;
        } catch {
          // Closed while we looked.
        }
      }
    } catch {
      // Gone.
    }
  }
  return null;
}

export async function site(
  middleware?: (req: IncomingMessage, res: ServerResponse) => boolean,
  latencyMs = 5,
  opts: SiteOptions = SITE_SIZE,
): Promise<SiteServer> {
  return serveSite(opts, 0, middleware, latencyMs);
}

// ---------------------------------------------------------------------------------------------------------
// Checks

export interface Expectation {
  /** Every URL the crawl must account for: fetched, or failed with a reason. */
  readonly pages: readonly string[];
  /** Pages that must fail, with the reason they must fail for (matched against the job's failed reason). */
  readonly mustFail?: ReadonlyMap<string, RegExp>;
  /** Pages that may fail (a fault can make them), as long as the failure has a reason. */
  readonly mayFail?: (url: string, reason: string) => boolean;
  /** Item keys that must be stored. */
  readonly items: readonly string[];
  /** The item a page holds: a page that legitimately failed takes its item out of the expected ones. */
  readonly itemOf?: (url: string) => string | undefined;
  /** Pages fetched that are not in `pages` but are fine (e.g. what a hostile page links to). */
  readonly extraPagesOk?: (url: string) => boolean;
  /**
   * The site's links (pages[0] is the start): with it, a page that no stored page links to is not lost but
   * unreached, its every referrer having failed legitimately (a list page that shared a poison page's worker at
   * each of its kills takes the pagination after it along). A page that a stored page links to must still be
   * fetched or failed: a finished page whose links were not queued is caught.
   */
  readonly linksOf?: (url: string) => readonly string[];
}

export interface Verdict {
  readonly pagesExpected: number;
  readonly pagesFetched: number;
  readonly pagesFailed: number;
  /** Pages that no stored page links to (see Expectation.linksOf): neither fetched nor failed, and not lost. */
  readonly pagesUnreached: number;
  readonly itemsExpected: number;
  readonly itemsStored: number;
  readonly itemsDuplicated: number;
  readonly problems: string[];
  readonly stats: CrawlStats | null;
  readonly failures: Map<string, string>;
}

/**
 * Reads the store (SQLite, through the store API for items), the run's stats and failed jobs, and compares.
 * Without a Redis URL (the CLI's private Redis is gone once it exits) only the store is read: then every page
 * must have been stored.
 */
export async function verify(
  scene: Scene,
  redisUrl: string | null,
  exp: Expectation,
  opts: { run?: string } = {},
): Promise<Verdict> {
  const problems: string[] = [];
  // Pages: one row per (run, url) in the store's pages table.
  const db = new (loadSqlite(scene.storePath).DatabaseSync)(scene.storePath, { readOnly: true });
  let pageRows: { url: string; run: string }[];
  try {
    pageRows = db.prepare('SELECT url, run FROM pages').all() as unknown as { url: string; run: string }[];
  } finally {
    db.close();
  }
  const runs = new Set(pageRows.map((p) => p.run));
  if (runs.size > 1 && !opts.run) problems.push(`pages of ${runs.size} runs in the store`);
  const stored = new Map<string, number>();
  for (const p of pageRows) if (!opts.run || p.run === opts.run) stored.set(p.url, (stored.get(p.url) ?? 0) + 1);

  // Failures: BullMQ keeps failed jobs with their reason.
  const failures = new Map<string, string>();
  let stats: CrawlStats | null = null;
  if (redisUrl) {
    const redis: Redis = connectRedis(redisUrl);
    const q = new CrawlQueue(redis, scene.task.name);
    try {
      await q.loadLayout();
      const run = opts.run ?? (await q.currentRun())?.run;
      if (run) stats = await q.stats(run);
      // Every partition's queue (one on a single node, one per primary on a cluster).
      for (const p of q.partitions()) {
        for (const job of await p.queue.getFailed(0, -1)) {
          if (!job?.data?.url) continue;
          failures.set(job.data.url, job.failedReason || '');
        }
      }
    } finally {
      await q.close();
      redis.disconnect();
    }
  }

  let fetched = 0;
  let failed = 0;
  let unreached = 0;
  const expected = new Set(exp.pages);
  const wantItems = new Set(exp.items);
  const reachable = exp.linksOf ? reachableThrough(exp.pages[0]!, (u) => stored.has(u), exp.linksOf) : null;
  for (const url of exp.pages) {
    const must = exp.mustFail?.get(url);
    if (stored.has(url)) {
      if (must) problems.push(`${url} should have failed (${must}) but was stored`);
      else fetched++;
      continue;
    }
    const reason = failures.get(url);
    if (reason === undefined) {
      if (reachable && !reachable.has(url)) {
        unreached++;
        const item = exp.itemOf?.(url);
        if (item) wantItems.delete(item);
      } else problems.push(`${url}: neither fetched nor failed (lost)`);
      continue;
    }
    if (!reason.trim()) problems.push(`${url} failed without a reason`);
    else if (must && !must.test(reason)) problems.push(`${url} failed for '${reason}', expected ${must}`);
    else if (!must && !exp.mayFail?.(url, reason)) problems.push(`${url} failed: ${reason}`);
    failed++;
    const item = exp.itemOf?.(url);
    if (item) wantItems.delete(item);
  }
  for (const [url, n] of stored) {
    if (!expected.has(url) && !exp.extraPagesOk?.(url)) problems.push(`unexpected page stored: ${url}`);
    if (n > 1) problems.push(`${url} stored ${n} times`);
  }
  // Every failed page is counted in the run's stats, whoever failed it (the processor, or BullMQ after stalls).
  const failedJobs = [...failures.keys()].filter((u) => expected.has(u) || exp.extraPagesOk?.(u)).length;
  if (stats && stats.failed < failedJobs)
    problems.push(`stats count ${stats.failed} failed pages, the queue holds ${failedJobs} failed jobs`);

  // Items, through the store API.
  const store = new SqliteStore(scene.storePath);
  await store.open();
  const rows: { key: string; data: Record<string, unknown> }[] = [];
  try {
    for await (const it of store.iterateItems('book', { pageSize: 1000 })) rows.push({ key: it.key, data: it.data });
  } finally {
    await store.close();
  }
  const keys = new Map<string, number>();
  for (const r of rows) keys.set(r.key, (keys.get(r.key) ?? 0) + 1);
  const duplicated = rows.length - keys.size;
  if (duplicated > 0) problems.push(`${duplicated} duplicate item rows`);
  let missingItems = 0;
  for (const k of wantItems) if (!keys.has(k)) missingItems++;
  if (missingItems > 0)
    problems.push(`${missingItems} items missing from the store (e.g. ${[...wantItems].find((k) => !keys.has(k))})`);
  const strangers = [...keys.keys()].filter((k) => !wantItems.has(k));
  if (strangers.length > 0) problems.push(`${strangers.length} unexpected items stored (e.g. ${strangers[0]})`);
  for (const r of rows.slice(0, 50))
    if (r.data.upc !== r.key || !r.data.title)
      problems.push(`item ${r.key} is malformed: ${JSON.stringify(r.data).slice(0, 120)}`);
  return {
    pagesExpected: exp.pages.length,
    pagesFetched: fetched,
    pagesFailed: failed,
    pagesUnreached: unreached,
    itemsExpected: wantItems.size,
    itemsStored: keys.size,
    itemsDuplicated: duplicated,
    problems: [...new Set(problems)].slice(0, 30),
    stats,
    failures,
  };
}

/** The pages reachable from `start` when only the pages that pass `stored` pass their links on. */
function reachableThrough(
  start: string,
  stored: (url: string) => boolean,
  linksOf: (url: string) => readonly string[],
): Set<string> {
  const seen = new Set([start]);
  const todo = [start];
  while (todo.length > 0) {
    const url = todo.pop()!;
    if (!stored(url)) continue;
    for (const next of linksOf(url)) {
      if (seen.has(next)) continue;
      seen.add(next);
      todo.push(next);
    }
  }
  return seen;
}

/** Entries in a task's items streams (one per partition: one on a single node, one per primary on a cluster). */
export async function streamLength(redis: Redis, task: string): Promise<number> {
  const q = new CrawlQueue(redis, task);
  try {
    await q.loadLayout();
    return (await Promise.all(q.partitions().map((p) => redis.xlen(p.keys.items)))).reduce((a, b) => a + b, 0);
  } finally {
    await q.close();
  }
}

/** The whole bookshop, pages and items: what a crawl without faults must produce. */
export function bookshop(
  siteUrl: string,
  opts: SiteOptions = SITE_SIZE,
): {
  pages: string[];
  items: string[];
  itemOf: (url: string) => string | undefined;
  linksOf: (url: string) => string[];
} {
  const books = allBooks(opts);
  const itemOf = (url: string) => {
    const m = /\/catalogue\/book-(\d+)\.html$/.exec(url);
    return m ? books[Number(m[1]) - 1]?.upc : undefined;
  };
  // A page's same-site links as the crawl's task normalises them (no query, no fragment), from the site's own HTML.
  const linksOf = (url: string) => {
    const page = renderPage(new URL(url).pathname, opts);
    if (!page) return [];
    const hrefs = [...page.body.matchAll(/href="([^"]*)"/g)].map((m) => new URL(m[1]!.replace(/&amp;/g, '&'), url));
    return hrefs.filter((u) => u.origin === new URL(siteUrl).origin).map((u) => `${u.origin}${u.pathname}`);
  };
  return { pages: expectedPages(siteUrl, opts), items: books.map((b) => b.upc), itemOf, linksOf };
}

// ---------------------------------------------------------------------------------------------------------
// The table

export interface Row {
  readonly scenario: string;
  readonly verdict: Verdict | null;
  /** How long the crawl needed to be back to normal after the fault, as defined per scenario. */
  readonly recovery: string;
  readonly durationMs: number;
  readonly ok: boolean;
  readonly note?: string;
}

export const rows: Row[] = [];

export function formatTable(list: readonly Row[]): string {
  const head = ['scenario', 'pages exp/fetched/failed', 'items exp/stored/dup', 'recovery', 'took', 'result'];
  const body = list.map((r) => [
    r.scenario,
    r.verdict
      ? `${r.verdict.pagesExpected}/${r.verdict.pagesFetched}/${r.verdict.pagesFailed}${r.verdict.pagesUnreached ? ` (${r.verdict.pagesUnreached} unreached)` : ''}`
      : '-',
    r.verdict ? `${r.verdict.itemsExpected}/${r.verdict.itemsStored}/${r.verdict.itemsDuplicated}` : '-',
    r.recovery,
    `${(r.durationMs / 1000).toFixed(1)} s`,
    r.ok ? 'ok' : 'FAILED',
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((b) => b[i]!.length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
  const out = [line(head), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...body.map(line)];
  const notes = list.filter((r) => r.note).map((r) => `  ${r.scenario}: ${r.note}`);
  return [...out, ...(notes.length ? ['', 'Notes:', ...notes] : [])].join('\n');
}

/** Where the table goes: one file per Redis kind, as scripts/test.mjs runs faults and faults-cluster side by side. */
export const TABLE_ARTIFACT = join(
  'test-artifacts',
  process.env.CS_FAULTS_REDIS === 'cluster' ? 'faults-table-cluster.md' : 'faults-table.md',
);

export function writeTableArtifact(text: string): string {
  mkdirSync(resolve('test-artifacts'), { recursive: true });
  const file = resolve(TABLE_ARTIFACT);
  writeFileSync(file, text + '\n');
  return file;
}

export function fmtMs(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return '-';
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`;
}

/** Spawns a node script with piped output, tracked for cleanup; `lines` collects its output. */
export function spawnNode(
  args: string[],
  env: NodeJS.ProcessEnv = {},
  cwd?: string,
): { child: ChildProcess; lines: string[]; waitFor: (re: RegExp, timeoutMs: number) => Promise<string> } {
  const child = track(
    spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env }, cwd }),
  );
  const lines: string[] = [];
  const listeners = new Set<(line: string) => void>();
  let partial = '';
  const onData = (b: Buffer) => {
    const text = partial + b.toString('utf8');
    const parts = text.split(/\r?\n|\r/);
    partial = parts.pop() ?? '';
    for (const l of parts) {
      lines.push(l);
      if (lines.length > 5000) lines.shift();
      for (const f of listeners) f(l);
    }
  };
  child.stdout!.on('data', onData);
  child.stderr!.on('data', onData);
  const waitFor = (re: RegExp, timeoutMs: number) =>
    new Promise<string>((resolveLine, reject) => {
      const hit = lines.find((l) => re.test(l));
      if (hit) return resolveLine(hit);
      const t = setTimeout(() => {
        listeners.delete(f);
        reject(new Error(`no line matching ${re} after ${timeoutMs} ms; last lines:\n${lines.slice(-15).join('\n')}`));
      }, timeoutMs);
      const f = (l: string) => {
        if (re.test(l)) {
          clearTimeout(t);
          listeners.delete(f);
          resolveLine(l);
        }
      };
      listeners.add(f);
      child.once('exit', (code, sig) => {
        if (!listeners.has(f)) return;
        clearTimeout(t);
        listeners.delete(f);
        reject(
          new Error(
            `process exited (${sig ?? code}) before a line matching ${re}; last lines:\n${lines.slice(-15).join('\n')}`,
          ),
        );
      });
    });
  return { child, lines, waitFor };
}
