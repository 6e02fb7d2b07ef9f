import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { loadTaskFile } from '../../src/workspace/taskFile';
import type { CrawlTask } from '../../src/core/task/model';
import { taskKeys } from '../../src/frontier/keys';
import type { PageRecord } from '../../src/store/types';
import { CrawlSession, type SessionOptions } from '../../src/run/session';
import { tempDir } from './tempDir';

// Helpers for crawl integration tests: a task file in a temp dir, a session with real worker processes from
// the built bundle (dist/worker.js), and the pages the workers buffered for the store.

export const WORKER_SCRIPT = resolve('dist/worker.js');

/**
 * The UPCs of the books a task's store holds, sorted, as `crawl-studio export --type book` gives them (duplicates
 * kept, so "every item once" can be asserted). The environment's CRAWL_STUDIO_REDIS is ignored: the store is the
 * task's own file.
 */
export async function exportedUpcs(taskFile: string): Promise<string[]> {
  const out = await promisify(execFile)(
    process.execPath,
    [resolve('dist/cli.js'), 'export', taskFile, '--type', 'book', '--format', 'jsonl'],
    { maxBuffer: 16 * 1024 * 1024, env: { ...process.env, CRAWL_STUDIO_REDIS: '' } },
  );
  return out.stdout
    .trim()
    .split('\n')
    .map((l) => (JSON.parse(l) as { upc: string }).upc)
    .sort();
}

export async function writeTask(yaml: string): Promise<CrawlTask> {
  const dir = tempDir('cs-task-');
  const file = join(dir, 'task.crawl.yaml');
  writeFileSync(file, yaml);
  return loadTaskFile(file);
}

export function session(task: CrawlTask, redisUrl: string, extra: Partial<SessionOptions> = {}): CrawlSession {
  return new CrawlSession({
    task,
    redisUrl,
    workers: 2,
    concurrency: 4,
    workerScript: WORKER_SCRIPT,
    fresh: true,
    // Short locks so a killed worker's jobs come back within seconds.
    lockDurationMs: 2_000,
    stalledIntervalMs: 1_000,
    pollMs: 200,
    ...extra,
  });
}

export async function bufferedPages(redisUrl: string, task: string): Promise<PageRecord[]> {
  const redis = new Redis(redisUrl);
  try {
    const entries = await redis.xrange(taskKeys(task).items, '-', '+');
    return entries.map(([, fields]) => JSON.parse(fields[1]!) as PageRecord);
  } finally {
    redis.disconnect();
  }
}

export interface BookTaskOptions {
  /** The `request` value; default a 5 s timeout and 3 attempts 100 ms apart. */
  readonly request?: string;
  /** Also follow the fault suite's hostile pages (test/faults/hostile.ts). */
  readonly hostile?: boolean;
}

/** The demo bookshop's task for engine tests; `extra` adds top-level YAML (scope, politeness, store...). */
export function bookTask(siteUrl: string, name: string, extra = '', o: BookTaskOptions = {}): string {
  return `name: ${name}
start: [${siteUrl}/]
canonical: { dropParams: [ref, src] }
request: ${o.request ?? '{ timeout: 5s, retries: { attempts: 3, backoff: fixed, delay: 100ms } }'}
${extra}
rules:
  - name: list
    match: ["${siteUrl}/", "**/catalogue/page-*.html", "**/about.html", "**/private/**"${o.hostile ? ', "**/hostile/**"' : ''}]
    follow:
      - selector: "ul.nav a, li.next a, header a${o.hostile ? ', ul.hostile a' : ''}"
        to: list
      - selector: "article.product_pod h3 a"
        to: book
  - name: book
    match: ["**/catalogue/book-*.html"]
    follow:
      - selector: "ul.related a"
    items:
      - type: book
        scope: article.product_page
        key: [upc]
        fields:
          title: h1
          upc: td.upc
          tags: { selector: li.tag, all: true }
`;
}
