import type { FollowProposals } from './followProposals';
import type { FieldProposal, ItemProposal } from './itemProposals';

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
  /** The items of the start page's repeated blocks (itemProposals.ts), for the list rule. */
  readonly listItems?: ItemProposal | null;
  /** The main content of a page the item links lead to, for the detail rule; absent: a template said to be one. */
  readonly detailItem?: ItemProposal | null;
  /** The page the detail item was read from. */
  readonly detailUrl?: string | null;
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
  const seen = [
    next ? `its next-page link (${next.count} match)` : '',
    items ? `${items.count} links to what it lists` : '',
  ]
    .filter(Boolean)
    .join(', ');
  const guessed = [next ? '' : 'the next-page link', items ? '' : 'the item links'].filter(Boolean).join(' and ');
  // Two rules' items of one type would share a table with different columns.
  const detail =
    opts.detailItem && opts.listItems && opts.detailItem.type === opts.listItems.type
      ? { ...opts.detailItem, type: `${opts.detailItem.type}_page` }
      : opts.detailItem;
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
${opts.listItems ? listItemsYaml(opts.listItems) : ''}  - name: detail
    items:
${detail ? detailItemYaml(detail, opts.detailUrl ?? null) : templateDetail}`;
}

const templateDetail = `      # A template: no page of this rule could be read. Pick fields in the preview.
      - type: page
        # \`scope\` would make one item per matching element; without it, one item per page.
        fields:
          title: h1                                      # the text of the first match
          description: { selector: "meta[name=description]", attr: content }
`;

function listItemsYaml(item: ItemProposal): string {
  return `    items:
      # Found on the start page: ${item.count} repeated blocks (${item.scope}); a field per part of them.
      - type: ${item.type}
        scope: ${yamlString(item.scope)}                  # one item per block
        fields:
${fieldsYaml(item.fields)}`;
}

function detailItemYaml(item: ItemProposal, from: string | null): string {
  return `      # Read from the main content of ${from ?? 'a page the list links to'} (${item.scope}).
      - type: ${item.type}
        scope: ${yamlString(item.scope)}
        fields:
${fieldsYaml(item.fields)}`;
}

function fieldsYaml(fields: readonly FieldProposal[]): string {
  return fields.map((f) => `          ${f.name}: ${fieldValue(f)}${comment(f.example)}\n`).join('');
}

function fieldValue(f: FieldProposal): string {
  if (f.attr === null && !f.url && !f.all) return yamlString(f.selector);
  const parts = [`selector: ${yamlString(f.selector)}`];
  if (f.attr) parts.push(`attr: ${f.attr}`);
  if (f.url) parts.push('url: true');
  if (f.all) parts.push('all: true');
  return `{ ${parts.join(', ')} }`;
}

// The C0 controls and DEL (what is not printable ASCII or beyond ASCII): they would break the YAML comment.
const NOT_PRINTABLE = /[^\x20-\x7e\x80-\uffff]/g;

/** The value it gave, shortened, as a comment: what to expect in the preview. */
function comment(example: string): string {
  const one = example.replace(/\s+/g, ' ').replace(NOT_PRINTABLE, '');
  return `   # ${one.length > 50 ? `${one.slice(0, 50)}…` : one}`;
}

/** A selector as a double-quoted YAML flow scalar (safe for any characters a selector holds). */
function yamlString(s: string): string {
  return JSON.stringify(s);
}
