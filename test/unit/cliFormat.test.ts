import assert from 'node:assert/strict';
import { droppedLine, storedLine } from '../../src/cli/format';
import type { CrawlStats } from '../../src/frontier/types';

// Counts of this run (issue 31, item 6): the summary's lines add up and count what the run did.

const stats = (dropped: Record<string, number>) => ({ dropped }) as unknown as CrawlStats;

describe('CLI summary: counts that add up (issue 31, item 6)', () => {
  it('links dropped: the reasons in the parentheses add up to the total; repeats are said after them', () => {
    // The line a crawl of a documentation site printed: 9,055 (offsite: 9,038, repeat: 138,064, scheme: 17).
    assert.equal(
      droppedLine(stats({ offsite: 9038, repeat: 138064, scheme: 17 })),
      '  links dropped   9,055 (offsite: 9,038, scheme: 17); 138,064 repeats (the same URL again on a page, kept once)',
    );
    assert.equal(droppedLine(stats({ pattern: 11 })), '  links dropped   11 (pattern: 11)');
    assert.equal(
      droppedLine(stats({ repeat: 1 })),
      '  links dropped   0; 1 repeat (the same URL again on a page, kept once)',
    );
    assert.equal(droppedLine(null), '  links dropped   0');
  });

  it("items stored: this run's rows, and a run that stored none says so beside what earlier runs left", () => {
    assert.equal(
      storedLine(
        [
          { type: 'book', count: 20 },
          { type: 'author', count: 0 },
        ],
        [
          { type: 'book', count: 50 },
          { type: 'author', count: 3 },
        ],
        '0 items of a key seen before, merged into its row',
      ),
      '  items stored    book: 20 rows written by this run (inserted or updated; 0 items of a key seen before, merged into its row)',
    );
    assert.equal(
      storedLine(
        [{ type: 'order', count: 0 }],
        [{ type: 'order', count: 30 }],
        '0 items of a key seen before, merged into its row',
      ),
      '  items stored    none by this run (0 items of a key seen before, merged into its row); the store holds order: 30 rows from earlier runs',
    );
    assert.equal(
      storedLine([], [], '0 items of a key seen before, merged into its row'),
      '  items stored    none by this run (0 items of a key seen before, merged into its row)',
    );
  });
});
