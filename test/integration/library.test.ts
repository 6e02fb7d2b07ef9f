import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parse } from 'yaml';
import type * as Library from '../../src/api';
import { allBooks, expectedPages, serveSite, type SiteOptions, type SiteServer } from '../../src/demo/site';
import { startRedis, type RedisServer } from '../support/services';
import { bookTask, writeTask } from '../support/crawl';

// The library (issue 21, item 8), as a program gets it: the built bundle dist/index.js, whose runCrawl drives the
// launcher `crawl-studio run` uses, with real worker processes, a real site and redis-server. (test/package
// installs the packed package and compiles a TypeScript program against its types.)

const lib = require(resolve('dist/index.js')) as typeof Library;
const SITE: SiteOptions = { listPages: 2, perPage: 6 };
const BOOKS = allBooks(SITE).length;

describe('library: runCrawl and loadTask (issue 21, item 8)', function () {
  this.timeout(120_000);
  let redis: RedisServer;
  let site: SiteServer;
  before(async () => {
    if (!existsSync('dist/index.js')) throw new Error('build first (node esbuild.mjs): dist/index.js is missing');
    redis = await startRedis();
    site = await serveSite(SITE);
  });
  after(async () => {
    await site?.close();
    await redis?.stop();
  });

  it('runs a task file: progress and item events, then the summary', async () => {
    const task = await writeTask(bookTask(site.url, 'libfile'));
    const crawl = lib.runCrawl(task.file, { redis: redis.url, workers: 1, concurrency: 4 });
    const items: Library.CrawledItem[] = [];
    const progress: Library.CrawlProgress[] = [];
    crawl.on('item', (i) => items.push(i));
    crawl.on('progress', (p) => progress.push(p));
    const summary = await crawl;
    assert.equal(summary.stopped, false);
    assert.equal(summary.resumed, false);
    assert.equal(summary.stats.done, expectedPages(site.url, SITE).length);
    assert.deepEqual(summary.stored.rows, [{ type: 'book', count: BOOKS }]);
    assert.equal(new Set(items.map((i) => i.key)).size, BOOKS, 'every stored book came as an item event');
    const b = items.find((i) => i.key === allBooks(SITE)[0]!.upc)!;
    assert.equal(b.data.title, allBooks(SITE)[0]!.title);
    assert.equal(b.rule, 'book');
    assert.equal(b.run, summary.run.run);
    assert.ok(progress.length > 0 && progress.every((p) => p.task === 'libfile'));
    assert.match(summary.stored.location, /libfile\.sqlite$/);
  });

  it('runs a task object: validated like a file (errors by field path), written beside its store for the workers', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cs-lib-'));
    const definition = parse(bookTask(site.url, 'libobject')) as Library.TaskDefinition;
    const broken = structuredClone(definition);
    (broken.rules[1]!.items![0]!.fields as Record<string, unknown>).url = { page: 'uri' };
    await assert.rejects(lib.loadTask(broken, { dir }), (err: unknown) => {
      assert.ok(err instanceof lib.TaskFileError);
      assert.deepEqual(
        err.diagnostics.map((d) => `${d.path}: ${d.message}`),
        [
          "rules[1].items[0].fields.url.page: must be one of 'url', 'finalUrl', 'status', 'fetchedAt', 'rule', not 'uri'",
        ],
      );
      return true;
    });
    assert.ok(!existsSync(join(dir, 'libobject.crawl.yaml')), 'an invalid task writes nothing');

    (definition.rules[1]!.items![0]!.fields as Record<string, unknown>).url = { page: 'url' };
    const summary = await lib.runCrawl(definition, { redis: redis.url, workers: 1, dir });
    assert.deepEqual(summary.stored.rows, [{ type: 'book', count: BOOKS }]);
    assert.equal(summary.stored.location, `sqlite:${join(dir, '.crawl', 'libobject.sqlite')}`);
    const written = readFileSync(join(dir, 'libobject.crawl.yaml'), 'utf8');
    assert.match(written, /^# Written by crawl-studio's runCrawl\(\)/);
    assert.deepEqual(parse(written), definition, 'the file the workers read is the object');

    // A task file of the same name that a person wrote is never overwritten.
    writeFileSync(join(dir, 'mine.crawl.yaml'), 'name: mine\n');
    await assert.rejects(
      lib.runCrawl({ ...definition, name: 'mine' }, { redis: redis.url, workers: 1, dir }).done,
      /mine\.crawl\.yaml exists and was not written by runCrawl\(\)/,
    );
    assert.equal(readFileSync(join(dir, 'mine.crawl.yaml'), 'utf8'), 'name: mine\n');
  });

  it('an AbortSignal stops the crawl gracefully, and the next runCrawl resumes its run', async () => {
    // One page at a time, 200 ms apart (3 s or more for the site): the abort comes long before the crawl could end.
    const task = await lib.loadTask(
      (await writeTask(bookTask(site.url, 'libabort', 'politeness: { perHost: { concurrency: 1, delay: 200ms } }')))
        .file,
    );
    const ac = new AbortController();
    const first = lib.runCrawl(task, { redis: redis.url, workers: 1, concurrency: 1, signal: ac.signal });
    first.on('item', () => ac.abort());
    const stopped = await first;
    assert.equal(stopped.stopped, true);
    assert.ok(stopped.stats.done < expectedPages(site.url, SITE).length, `stopped early: ${stopped.stats.done} pages`);
    assert.ok(stopped.stored.rows[0]!.count >= 1, 'what was fetched before the abort is stored');

    const second = await lib.runCrawl(task, { redis: redis.url, workers: 1, concurrency: 4 });
    assert.equal(second.resumed, true);
    assert.equal(second.run.run, stopped.run.run);
    assert.equal(second.stats.done, expectedPages(site.url, SITE).length, 'each page fetched once across both');
    assert.deepEqual(second.stored.rows, [{ type: 'book', count: BOOKS }]);

    // A signal aborted before the start runs nothing.
    await assert.rejects(lib.runCrawl(task, { redis: redis.url, signal: AbortSignal.abort() }).done, {
      name: 'AbortError',
    });
  });

  it('a listener that throws stops the crawl, and `done` rejects with its error', async () => {
    const task = await writeTask(
      bookTask(site.url, 'libthrow', 'politeness: { perHost: { concurrency: 1, delay: 50ms } }'),
    );
    const crawl = lib.runCrawl(task.file, { redis: redis.url, workers: 1, concurrency: 1 });
    crawl.on('item', () => {
      throw new Error('the pipeline broke');
    });
    await assert.rejects(crawl.done, /the pipeline broke/);
  });
});
