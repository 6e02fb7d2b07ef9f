import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { DROP_REASONS, droppedTotal, explainDrop } from '../../src/core/task/dropReasons';
import { LINK_REASONS } from '../../src/core/designer/protocol';
import { parseTask } from '../../src/core/task/parse';
import { dropWarnings } from '../../src/cli/format';
import type { CrawlStats } from '../../src/frontier/types';

// Every reason a link is dropped has a label and a README row (issue 21, item 1): a counter shown in the terminal
// under a name nobody documented is as good as invisible.

describe('drop reasons', () => {
  it('covers every reason the page pipeline and the sitemap router produce, and the README documents each', () => {
    const readme = readFileSync('README.md', 'utf8');
    for (const r of [...Object.keys(LINK_REASONS), 'sitemap-limit', 'since', 'follow', 'nesting']) {
      assert.ok(DROP_REASONS[r], `no label for '${r}'`);
    }
    for (const r of Object.keys(DROP_REASONS))
      assert.match(readme, new RegExp(`^  \\| [^|]*\`${r}\``, 'm'), `README lacks a row for '${r}'`);
  });

  it('repeat is shown but not in the total', () => {
    assert.equal(droppedTotal({ pattern: 3, repeat: 5, 'no-rule': 1 }), 4);
  });

  it('warns for a rule that lost most of its links, not for one that kept most', () => {
    const { task } = parseTask(
      `name: t\nstart: [https://example.com/]\nscope: { allow: ["https://example.com/"] }\nrules:\n  - name: list\n    follow: [{ selector: a, to: list }]\n  - name: other\n`,
      't.crawl.yaml',
    );
    const stats = {
      dropped: { pattern: 11 },
      byRule: { list: { links: 11, dropped: { pattern: 11 } }, other: { links: 10, dropped: { pattern: 5 } } },
    } as unknown as CrawlStats;
    const w = dropWarnings(stats, task!);
    assert.equal(w.length, 1, w.join('\n'));
    assert.match(
      w[0]!,
      /rule list: 11 of 11 links dropped \(pattern: scope\.allow \['https:\/\/example\.com\/'\] matches none of them/,
    );
    assert.match(explainDrop(task!, 'list', 'depth'), /scope\.maxDepth/);
  });
});
