import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { BrowserGoneError, BrowserPool, type ContextKind } from '../../src/worker/browser/pool';
import { descendants, descendantsMemory } from '../../src/worker/browser/processes';
import { browserOrSkip } from '../support/browser';

// The worker's browser pool alone, on real Chromium: how many pages it opens at once, when it replaces its browser
// (a page cap, a hang), and that what it launched is gone once it is closed.

describe('browser pool (real Chromium)', function () {
  this.timeout(60_000);
  let executablePath: string;

  before(function () {
    executablePath = browserOrSkip(this);
  });

  /** Contexts of one kind, counted as they are made and let go. */
  const counted = () => {
    const c = { made: 0, disposed: 0 };
    const kind: ContextKind<number> = {
      key: 'k',
      create: () => ({ options: {}, extra: ++c.made, dispose: () => void c.disposed++ }),
    };
    return { c, kind };
  };
  const plain = counted().kind;

  const page = async (p: BrowserPool) =>
    p.withPage(plain, 20_000, async (pg) => {
      await pg.setContent('<p>x</p>');
      return pg.content();
    });

  it('opens at most maxOpenPages at once, and uses them all', async () => {
    const pool = new BrowserPool({ executablePath, maxOpenPages: 2 });
    let open = 0;
    let most = 0;
    try {
      await Promise.all(
        Array.from({ length: 6 }, () =>
          pool.withPage(plain, 20_000, async (pg) => {
            open++;
            most = Math.max(most, open);
            await pg.setContent('<p>x</p>');
            await pg.waitForTimeout(200);
            open--;
          }),
        ),
      );
    } finally {
      await pool.close();
    }
    assert.equal(most, 2);
    assert.equal(pool.launched(), 1);
  });

  it('retires its browser after retireAfterPages pages, and leaves no process once closed', async () => {
    const before = new Set(descendants().map((p) => p.pid));
    const pool = new BrowserPool({ executablePath, maxOpenPages: 1, retireAfterPages: 2 });
    try {
      for (let i = 0; i < 5; i++) assert.match(await page(pool), /<p>x<\/p>/);
      assert.equal(pool.launched(), 3, 'pages 1-2, 3-4, 5');
    } finally {
      await pool.close();
    }
    let left = descendants().filter((p) => !before.has(p.pid) && !isZombie(p.pid));
    for (let i = 0; i < 50 && left.length; i++) {
      await new Promise((r) => setTimeout(r, 200));
      left = descendants().filter((p) => !before.has(p.pid) && !isZombie(p.pid));
    }
    assert.deepEqual(
      left.map((p) => p.pid),
      [],
    );
  });

  it("measures its browser's memory without counting the pages its processes share once per process", async () => {
    const pool = new BrowserPool({ executablePath, maxOpenPages: 4 });
    try {
      await Promise.all(
        Array.from({ length: 4 }, () =>
          pool.withPage(plain, 20_000, async (pg) => {
            await pg.setContent('<p>x</p>');
            const memory = descendantsMemory();
            const rssSum = descendants().reduce((sum, p) => sum + p.rssPages * 4096, 0);
            // Chromium's processes share their binary and much of their heap: summed, their resident sizes count those
            // pages once per process (that sum retired the browser every 10 pages in the bench).
            assert.ok(
              memory > 0 && memory < rssSum * 0.8,
              `${Math.round(memory / 2 ** 20)} MB measured against ${Math.round(rssSum / 2 ** 20)} MB of summed RSS`,
            );
          }),
        ),
      );
    } finally {
      await pool.close();
    }
  });

  it('keeps a context for the next page of its kind, never for two pages at once, and lets it go with its browser', async () => {
    const { c, kind } = counted();
    const pool = new BrowserPool({ executablePath, maxOpenPages: 2 });
    const used: number[] = [];
    try {
      // One after the other: one context.
      for (let i = 0; i < 3; i++)
        await pool.withPage(kind, 20_000, async (pg, n) => void used.push(n, (await pg.setContent('<p>x</p>'), 0)));
      assert.equal(c.made, 1);
      // Two at once: two contexts, each page alone in its own.
      const inUse = new Set<number>();
      await Promise.all(
        [0, 1].map(() =>
          pool.withPage(kind, 20_000, async (pg, n) => {
            assert.ok(!inUse.has(n), 'a context serves one page at a time');
            inUse.add(n);
            await pg.setContent('<p>x</p>');
            await pg.waitForTimeout(200);
            inUse.delete(n);
          }),
        ),
      );
      assert.equal(c.made, 2);
      // A page that asks for it leaves its context to be closed, not kept.
      await pool.withPage(kind, 20_000, async (_pg, _n, discard) => discard());
      assert.equal(c.disposed, 1);
    } finally {
      await pool.close();
    }
    assert.equal(c.disposed, c.made, 'every context let go once its browser closed');
  });

  it('replaces a browser that does not answer within the deadline, and the next page gets a new one', async () => {
    const pool = new BrowserPool({ executablePath, maxOpenPages: 1 });
    try {
      await assert.rejects(
        pool.withPage(plain, 1_000, () => new Promise(() => undefined)),
        (err: unknown) => err instanceof BrowserGoneError && err.kind === 'hung',
      );
      assert.match(await page(pool), /<p>x<\/p>/);
      assert.equal(pool.launched(), 2);
    } finally {
      await pool.close();
    }
  });
});

function isZombie(pid: number): boolean {
  try {
    return /^\S+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return true;
  }
}
