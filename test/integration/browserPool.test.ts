import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { BrowserGoneError, BrowserPool } from '../../src/worker/browser/pool';
import { findBrowser } from '../../src/worker/browser/executable';
import { descendants } from '../../src/worker/browser/processes';
import { inCI } from '../support/services';

// The worker's browser pool alone, on real Chromium: how many pages it opens at once, when it replaces its browser
// (a page cap, a hang), and that what it launched is gone once it is closed.

describe('browser pool (real Chromium)', function () {
  this.timeout(60_000);
  let executablePath: string;

  before(function () {
    try {
      executablePath = findBrowser();
    } catch (err) {
      if (inCI()) throw err;
      this.skip();
    }
  });

  const page = async (p: BrowserPool) => p.withPage({}, 20_000, async (pg) => {
    await pg.setContent('<p>x</p>');
    return pg.content();
  });

  it('opens at most maxOpenPages at once, and uses them all', async () => {
    const pool = new BrowserPool({ executablePath, maxOpenPages: 2 });
    let open = 0;
    let most = 0;
    try {
      await Promise.all(Array.from({ length: 6 }, () => pool.withPage({}, 20_000, async (pg) => {
        open++;
        most = Math.max(most, open);
        await pg.setContent('<p>x</p>');
        await pg.waitForTimeout(200);
        open--;
      })));
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
    assert.deepEqual(left.map((p) => p.pid), []);
  });

  it('replaces a browser that does not answer within the deadline, and the next page gets a new one', async () => {
    const pool = new BrowserPool({ executablePath, maxOpenPages: 1 });
    try {
      await assert.rejects(pool.withPage({}, 1_000, () => new Promise(() => undefined)), (err: unknown) => err instanceof BrowserGoneError && err.kind === 'hung');
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
