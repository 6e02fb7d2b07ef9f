import assert from 'node:assert/strict';
import type { SiteServer } from '../../src/demo/site';
import { attachStore, type AttachedStore } from '../../src/worker/storage';
import { connectRedis } from '../../src/queue/redis';
import { startRedis, type RedisServer } from '../support/services';
import {
  bookshop,
  faultSession,
  fmtMs,
  formatTable,
  killAllTracked,
  makeScene,
  removeScene,
  rows,
  site,
  sleep,
  SOAK,
  verify,
  writeTableArtifact,
  type Row,
  type Scene,
  type Verdict,
} from './support';

// Fault injection against real processes: each scenario crawls a local bookshop of about 2,000 pages with real
// worker processes, Redis and a SQLite store, injects its fault, lets the crawl finish, and checks that every
// reachable page was fetched (or failed with a reason) and every item is stored exactly once. A table of the
// results is printed at the end (and written to test-artifacts/faults-table.md).
//
//   npm run test:faults                 the CI-sized suite (about 5 minutes)
//   CS_FAULTS_SOAK=1 npm run test:faults  the soak: 10,000 pages, faults repeated for longer

const KILLS = SOAK ? 40 : 10;

function record(scenario: string, verdict: Verdict | null, recovery: string, t0: number, note?: string, ok?: boolean): Row {
  const row: Row = { scenario, verdict, recovery, durationMs: Date.now() - t0, ok: ok ?? (verdict !== null && verdict.problems.length === 0), note };
  rows.push(row);
  return row;
}

function assertClean(v: Verdict): void {
  assert.deepEqual(v.problems, [], v.problems.join('\n'));
}

describe('fault injection (real workers, Redis, HTTP and SQLite)', function () {
  this.timeout(SOAK ? 3_600_000 : 240_000);
  let redis: RedisServer | undefined;
  let web: SiteServer | undefined;
  let scene: Scene | undefined;
  let attached: AttachedStore | undefined;
  let storeRedis: ReturnType<typeof connectRedis> | undefined;

  afterEach(async () => {
    await attached?.close().catch(() => undefined);
    storeRedis?.disconnect();
    await killAllTracked();
    await web?.close();
    await redis?.stop();
    removeScene(scene);
    attached = undefined;
    storeRedis = undefined;
    web = undefined;
    redis = undefined;
    scene = undefined;
  });

  after(() => {
    const text = formatTable(rows);
    const file = writeTableArtifact(text);
    console.log(`\n${text}\n\n(also in ${file})\n`);
  });

  async function withStore(s: Scene, url: string): Promise<AttachedStore> {
    storeRedis = connectRedis(url);
    attached = await attachStore(storeRedis, s.task, () => undefined);
    return attached;
  }

  it('baseline: no fault', async () => {
    const t0 = Date.now();
    redis = await startRedis();
    web = await site();
    scene = await makeScene(web.url, 'baseline');
    const store = await withStore(scene, redis.url);
    const s = faultSession(scene, redis.url, { store: store.hooks });
    await s.run();
    await s.close();
    await store.close();
    attached = undefined;
    const v = await verify(scene, redis.url, bookshop(web.url));
    record('baseline (no fault)', v, '-', t0);
    assertClean(v);
  });

  it('a poison page that kills its worker every time is failed after 3 stalls, with a reason, and counted', async () => {
    const t0 = Date.now();
    redis = await startRedis();
    const small = { listPages: 10, perPage: 50, filler: 1 };
    const POISON = '/catalogue/book-77.html';
    let s: ReturnType<typeof faultSession> | undefined;
    let poisonHits = 0;
    web = await site((req) => {
      if (req.url?.split('?')[0] === POISON && s) {
        poisonHits++;
        // Whatever worker asked for it dies (all of them: the test cannot tell which one asked).
        for (const w of s.workers()) s.supervisor.kill(w.pid, 'SIGKILL');
        return true;
      }
      return false;
    }, 20, small);
    scene = await makeScene(web.url, 'poison');
    const store = await withStore(scene, redis.url);
    s = faultSession(scene, redis.url, { store: store.hooks, workers: 2, concurrency: 4 });
    const result = await s.run();
    await s.close();
    await store.close();
    attached = undefined;
    const shop = bookshop(web.url, small);
    const poisonUrl = `${web.url}${POISON}`;
    const poisonUpc = shop.items[76]!;
    const v = await verify(scene, redis.url, {
      ...shop,
      items: shop.items.filter((k) => k !== poisonUpc),
      mustFail: new Map([[poisonUrl, /stalled/]]),
      // Pages that happened to be in flight at each of the kills may share the poison page's fate.
      mayFail: (_url, reason) => /stalled/.test(reason),
    });
    record('poison page kills its worker', v, `failed after ${poisonHits} fetches`, t0);
    assert.ok(poisonHits >= 4 && poisonHits <= 6, `poison page fetched ${poisonHits} times`);
    // Counted whether or not an earlier attempt got as far as storing the page before its worker died.
    const stalledJobs = [...v.failures.values()].filter((r) => /stalled/.test(r)).length;
    assert.ok(stalledJobs >= 1);
    assert.equal(result.status.stats!.failures.stalled ?? 0, stalledJobs, 'stall failures are counted in the run stats');
    assertClean(v);
  });

  it(`SIGKILL a random worker every 2.5 s (${KILLS} kills), the supervisor restarts it`, async () => {
    const t0 = Date.now();
    redis = await startRedis();
    // Slow enough that the crawl outlasts the kills; jobs are in flight when each kill lands.
    web = await site(undefined, 60);
    scene = await makeScene(web.url, 'workerkill');
    const store = await withStore(scene, redis.url);
    const s = faultSession(scene, redis.url, { store: store.hooks, workers: 3, concurrency: 8 });
    const kills: number[] = [];
    const readyAfterKill: number[] = [];
    const unexpected: string[] = [];
    s.supervisor.on('exit', (_pid, _code, signal, expected) => {
      if (!expected && signal !== 'SIGKILL') unexpected.push(String(signal));
    });
    // A replacement is back in service when it logs its start line.
    s.supervisor.on('log', (_pid, line) => {
      if (/ worker \S+ on redis/.test(line) && kills.length > readyAfterKill.length) readyAfterKill.push(Date.now() - kills[readyAfterKill.length]!);
    });
    let stop = false;
    const killer = (async () => {
      await sleep(2_000);
      while (!stop && kills.length < KILLS) {
        const ws = s.workers();
        if (ws.length > 0) {
          const w = ws[Math.floor(Math.random() * ws.length)]!;
          s.supervisor.kill(w.pid, 'SIGKILL');
          kills.push(Date.now());
        }
        await sleep(2_500);
      }
    })();
    await s.run();
    stop = true;
    await killer;
    await s.close();
    await store.close();
    attached = undefined;
    const v = await verify(scene, redis.url, bookshop(web.url));
    const worst = readyAfterKill.length ? Math.max(...readyAfterKill) : null;
    const note = kills.length < KILLS ? `only ${kills.length} kills landed before the crawl finished` : undefined;
    record(`SIGKILL random worker x${kills.length}`, v, `replacement ready ≤ ${fmtMs(worst)}`, t0, note, v.problems.length === 0 && kills.length === KILLS);
    assert.equal(kills.length, KILLS, 'every kill landed while the crawl ran');
    assert.deepEqual(unexpected, []);
    assertClean(v);
  });
});
