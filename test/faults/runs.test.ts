import assert from 'node:assert/strict';
import { appendFileSync, existsSync, linkSync, statSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import type { SiteServer } from '../../src/demo/site';
import { connectRedis } from '../../src/redis/connect';
import { itemTableName } from '../../src/store/tables';
import { faultRedis, type FaultRedis } from './redis';
import {
  bookshop,
  CLI_SCRIPT,
  exitOf,
  fmtMs,
  formatTable,
  killAllTracked,
  makeScene,
  removeScene,
  site,
  spawnNode,
  streamLength,
  tail,
  verify,
  waitUntil,
  TABLE_ARTIFACT,
  writeTableArtifact,
  type Row,
  type Scene,
  type Verdict,
} from './support';

// Fault injection against the run itself, from the CLI as a user runs it (issue 22, items 4 and 8): the store file
// deleted mid-crawl, and a second `run` of a task that is already running, refused and then forced. The same
// bookshop, real worker processes, Redis and SQLite as faults.test.ts; the rows join its table (printed, and
// appended to test-artifacts/faults-table(-cluster).md when that suite wrote it in this mocha run).

const rows: Row[] = [];
const t00 = performance.timeOrigin;

/** The highest "N done" a CLI printed (its progress lines, every 2 s off a terminal, and its summary). */
const doneIn = (lines: string[]) =>
  Math.max(
    0,
    ...lines
      .map((l) => /· ([\d,]+) done ·|^\s*pages fetched\s+([\d,]+)/.exec(l))
      .filter(Boolean)
      .map((m) => Number((m![1] ?? m![2])!.replace(/,/g, ''))),
  );

function record(
  scenario: string,
  verdict: Verdict | null,
  recovery: string,
  t0: number,
  note: string | undefined,
  ok: boolean,
): void {
  rows.push({ scenario, verdict, recovery, durationMs: Date.now() - t0, ok, note });
}

/** Page URLs and item keys of an SQLite store file, read with SQLite itself (not through the store's code). */
function readFile(path: string): { pages: string[]; items: string[] } {
  const db = new DatabaseSync(path, { readOnly: true });
  try {
    const pages = (db.prepare('SELECT url FROM pages').all() as { url: string }[]).map((r) => r.url);
    const items = (db.prepare(`SELECT key FROM "${itemTableName('book')}"`).all() as { key: string }[]).map(
      (r) => r.key,
    );
    return { pages, items };
  } finally {
    db.close();
  }
}

describe('fault injection: the run (store deleted, double start)', function () {
  this.timeout(300_000);
  let redis: FaultRedis | undefined;
  let web: SiteServer | undefined;
  const scenes: Scene[] = [];

  afterEach(async () => {
    await killAllTracked();
    await web?.close();
    await redis?.stop();
    for (const s of scenes.splice(0)) removeScene(s);
    web = undefined;
    redis = undefined;
  });

  after(() => {
    const text = formatTable(rows);
    const artifact = TABLE_ARTIFACT;
    if (existsSync(artifact) && statSync(artifact).mtimeMs >= t00) appendFileSync(artifact, `\n${text}\n`);
    else writeTableArtifact(text);
    console.log(`\n${text}\n`);
  });

  it('the store file deleted mid-crawl: the run fails saying so, claims no rows, and the next run stores what was still in Redis', async () => {
    const t0 = Date.now();
    redis = await faultRedis();
    web = await site(undefined, 20);
    const scene = await makeScene(web.url, 'storedel');
    scenes.push(scene);
    const args = ['run', scene.taskFile, '--redis', redis.url, '--workers', '2', '--concurrency', '8'];
    const problems: string[] = [];

    let cli = spawnNode([CLI_SCRIPT, ...args]);
    await waitUntil('300 pages', () => doneIn(cli.lines) >= 300, 60_000, 100, tail(cli));
    // `rm items.sqlite*`, with hard links that keep the deleted file readable here: its handle in the CLI still
    // writes to it, and what it holds is what the user lost.
    const lost = join(scene.dir, 'lost.sqlite');
    for (const suffix of ['', '-wal', '-shm', '-journal']) {
      if (!existsSync(scene.storePath + suffix)) continue;
      linkSync(scene.storePath + suffix, lost + suffix);
      unlinkSync(scene.storePath + suffix);
    }
    const deletedAt = Date.now();
    const code1 = await exitOf(cli.child, 60_000, tail(cli));
    const detectedMs = Date.now() - deletedAt;
    const out1 = cli.lines.join('\n');
    if (code1 !== 1) problems.push(`the run with its store deleted exited ${code1}`);
    if (!/the store file .*items\.sqlite was deleted during the run/.test(out1))
      problems.push(`no "store file deleted" error: ${out1.slice(-400)}`);
    if (/items stored/.test(out1)) problems.push('the failed run still printed an "items stored" summary');
    const conn = connectRedis(redis.url);
    const waiting = await streamLength(conn, 'storedel').finally(() => conn.disconnect());

    const resumeAt = Date.now();
    cli = spawnNode([CLI_SCRIPT, ...args]);
    const code2 = await exitOf(cli.child, 120_000, tail(cli));
    const out2 = cli.lines.join('\n');
    if (code2 !== 0) problems.push(`the next run exited ${code2}: ${out2.slice(-400)}`);
    if (!/Resumed run/.test(out2)) problems.push('the next run did not resume the run');

    const before = readFile(lost);
    const after = readFile(scene.storePath);
    const claimed = /items stored\s+book: ([\d,]+) rows/.exec(out2)?.[1]?.replace(/,/g, '');
    if (Number(claimed) !== after.items.length)
      problems.push(`the next run claims ${claimed} rows, its file holds ${after.items.length}`);
    const exp = bookshop(web.url);
    const pages = new Set([...before.pages, ...after.pages]);
    const items = new Set([...before.items, ...after.items]);
    const missingPages = exp.pages.filter((p) => !pages.has(p));
    const missingItems = exp.items.filter((k) => !items.has(k));
    if (missingPages.length) problems.push(`${missingPages.length} pages in neither file (e.g. ${missingPages[0]})`);
    if (missingItems.length) problems.push(`${missingItems.length} items in neither file (e.g. ${missingItems[0]})`);
    const dup = before.items.length - new Set(before.items).size + (after.items.length - new Set(after.items).size);
    if (dup) problems.push(`${dup} duplicate item rows within a file`);
    if (after.items.length === 0 || before.items.length === 0)
      problems.push(`expected items in both files: deleted ${before.items.length}, new ${after.items.length}`);
    const verdict: Verdict = {
      pagesExpected: exp.pages.length,
      pagesFetched: exp.pages.length - missingPages.length,
      pagesFailed: 0,
      pagesUnreached: 0,
      itemsExpected: exp.items.length,
      itemsStored: items.size,
      itemsDuplicated: dup,
      problems,
      stats: null,
      failures: new Map(),
    };
    record(
      'store file deleted mid-crawl, resume',
      verdict,
      `failed ${fmtMs(detectedMs)} after; next run done ${fmtMs(Date.now() - resumeAt)} after restart`,
      t0,
      `items counted across both files: ${before.items.length} in the deleted one (lost to the user), ${after.items.length} in the new one, ` +
        `${waiting} stream entries left for the next run; the failed run claimed no rows`,
      problems.length === 0,
    );
    assert.deepEqual(problems, [], problems.join('\n'));
  });

  it('double start: a second run and run --fresh are refused while the first runs; --force takes over and the first stops', async () => {
    const t0 = Date.now();
    redis = await faultRedis();
    // Slow enough that the first run outlasts both refusals and the takeover: 2,042 pages, 60 ms each, 16 in flight.
    web = await site(undefined, 60);
    const problems: string[] = [];
    const exp = bookshop(web.url);
    const onceEach = (base: Map<string, number>, label: string) => {
      const wrong = exp.pages.filter(
        (p) => (web!.hits.get(new URL(p).pathname) ?? 0) - (base.get(new URL(p).pathname) ?? 0) !== 1,
      );
      if (wrong.length)
        problems.push(
          `${label}: ${wrong.length} pages not fetched exactly once (e.g. ${wrong[0]}: ${(web!.hits.get(new URL(wrong[0]!).pathname) ?? 0) - (base.get(new URL(wrong[0]!).pathname) ?? 0)})`,
        );
    };

    // 1: refused twice, and the first run finishes whole.
    const a = await makeScene(web.url, 'double');
    scenes.push(a);
    const args = (s: Scene, ...more: string[]) => [
      'run',
      s.taskFile,
      '--redis',
      redis!.url,
      '--workers',
      '2',
      '--concurrency',
      '8',
      ...more,
    ];
    const first = spawnNode([CLI_SCRIPT, ...args(a)]);
    await waitUntil('100 pages', () => doneIn(first.lines) >= 100, 60_000, 100, tail(first));
    for (const more of [[], ['--fresh']]) {
      const second = spawnNode([CLI_SCRIPT, ...args(a, ...more)]);
      const code = await exitOf(second.child, 30_000, tail(second));
      const out = second.lines.join('\n');
      if (code !== 1) problems.push(`second run ${more.join(' ')} exited ${code}`);
      if (!new RegExp(`task 'double' is already running: crawl-studio run \\(pid ${first.child.pid} on `).test(out))
        problems.push(`second run ${more.join(' ')}: no refusal naming the first: ${out.slice(-300)}`);
    }
    const codeFirst = await exitOf(first.child, 120_000, tail(first));
    if (codeFirst !== 0) problems.push(`the first run exited ${codeFirst}`);
    const v = await verify(a, redis.url, exp);
    problems.push(...v.problems);
    onceEach(new Map(), 'refused');

    // 2: --force takes the run over; the first driver notices, stops its workers and says who took over.
    const base = new Map(web.hits);
    const b = await makeScene(web.url, 'takeover');
    scenes.push(b);
    const driven = spawnNode([CLI_SCRIPT, ...args(b)]);
    await waitUntil('100 pages', () => doneIn(driven.lines) >= 100, 60_000, 100, tail(driven));
    const forcedAt = Date.now();
    const forced = spawnNode([CLI_SCRIPT, ...args(b, '--force')]);
    const codeDriven = await exitOf(driven.child, 60_000, tail(driven)).catch(
      (e: Error) => (problems.push(e.message), null),
    );
    const stoppedMs = Date.now() - forcedAt;
    const outDriven = driven.lines.join('\n');
    if (codeDriven !== 1) problems.push(`the taken-over run exited ${codeDriven}`);
    if (!/task 'takeover' was taken over: crawl-studio run \(pid \d+ on .*stopped its workers/.test(outDriven))
      problems.push(`the taken-over run did not say so: ${outDriven.slice(-300)}`);
    const codeForced = await exitOf(forced.child, 120_000, tail(forced));
    if (codeForced !== 0) problems.push(`the forced run exited ${codeForced}`);
    if (!/Resumed run/.test(forced.lines.join('\n'))) problems.push('the forced run did not resume the run');
    const v2 = await verify(b, redis.url, exp);
    problems.push(...v2.problems.map((p) => `takeover: ${p}`));
    onceEach(base, 'takeover');

    record(
      'double start: refused x2, then --force',
      { ...v2, problems },
      `taken-over run stopped ${fmtMs(stoppedMs)} after --force`,
      t0,
      `second run and run --fresh refused while the first ran; first finished with every page once (${v.pagesFetched}/${v.pagesExpected}); ` +
        `after --force each page fetched once across both drivers`,
      problems.length === 0,
    );
    assert.deepEqual(problems, [], problems.join('\n'));
  });
});
