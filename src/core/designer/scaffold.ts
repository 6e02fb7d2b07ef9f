import type { FollowProposals } from './followProposals';

// "New Task File": a commented starting point that validates as it is and runs (a unit test holds it to that),
// so the first thing a new user sees in the preview is a working crawl to change, not a list of errors. Its follow
// rules are what the start page shows when it could be read (followProposals.ts), else guesses said to be ones;
// no depth limit cuts a pagination short (issue 23, item 8: `maxDepth: 3` stopped a 10-page list at page 4).

export interface ScaffoldOptions {
  /** Task name (also its queue name); made valid if it is not. */
  readonly name: string;
  /** The first start URL. */
  readonly start: string;
  /** The follow rules found on the start page; absent or empty: the template's guesses. */
  readonly follows?: FollowProposals;
}

/** A valid task name from anything a person typed: lowercase, `[a-z0-9_-]`, at most 64 characters. */
export function taskName(input: string): string {
  const cleaned = input
    .toLowerCase()
    .replace(/\.crawl\.ya?ml$/, '')
    .replace(/[^a-z0-9_-]+/g, '-')
    .replace(/^[-_]+|-+$/g, '')
    .slice(0, 64);
  return cleaned || 'my-crawl';
}

export function scaffoldTask(opts: ScaffoldOptions): string {
  const name = taskName(opts.name);
  const next = opts.follows?.next ?? null;
  const items = opts.follows?.items ?? null;
  const found = next !== null || items !== null;
  const nextSel = yamlString(next?.selector ?? 'a[rel=next]');
  const itemsSel = yamlString(items?.selector ?? 'article a');
  const seen = [next ? `its next-page link (${next.count} match)` : '', items ? `${items.count} links to what it lists` : ''].filter(Boolean).join(', ');
  const guessed = [next ? '' : 'the next-page link', items ? '' : 'the item links'].filter(Boolean).join(' and ');
  const followNote = found
    ? `      # Found on the start page: ${seen}.${guessed ? `\n      # Guessed: ${guessed}.` : ''}
      # The preview's Links tab shows where they lead; click a link in the page to pick another.`
    : `      # Guesses: the preview's Links tab shows what they match on your page;
      # click a link in the page to pick one.`;
  return `# Crawl Studio task file. Design it against a real page: run "Crawl Studio: Open Preview" (or the
# "Preview" lens above a rule), pick a page, then click an element in the rendered page to get a selector
# and "Insert" it at the cursor. The schema documents every key: hover one, or press Ctrl+Space.
name: ${name}                      # also the queue name: each task is its own queue
start:
  - ${opts.start}
scope:
  maxPages: 500                    # stop enqueueing after this many pages (the finish message says if it did)
  # maxDepth: 10                   # hops from a start URL: each page of a pagination is one more
request:
  timeout: 15s
  retries: { attempts: 3, backoff: exponential, delay: 1s }
politeness:
  perHost: { concurrency: 2, delay: 250ms }   # be gentle with the site
rules:
  # Start URLs go to the first rule whose \`match\` matches them, else to the first rule.
  - name: list
    follow:
      # Links to follow from list pages; \`to\` names the rule that handles the pages they lead to.
${followNote}
      - { selector: ${nextSel}, to: list, priority: 1 }
      - { selector: ${itemsSel}, to: detail }
  - name: detail
    items:
      - type: page
        # \`scope\` would make one item per matching element; without it, one item per page.
        fields:
          title: h1                                      # the text of the first match
          description: { selector: "meta[name=description]", attr: content }
          links: { selector: "main a", attr: href, url: true, all: true }
`;
}

/** A selector as a double-quoted YAML flow scalar (safe for any characters a selector holds). */
function yamlString(s: string): string {
  return JSON.stringify(s);
}
