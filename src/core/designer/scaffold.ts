// "New Task File": a commented starting point that validates as it is and runs (a unit test holds it to that),
// so the first thing a new user sees in the preview is a working crawl to change, not a list of errors.

export interface ScaffoldOptions {
  /** Task name (also its queue name); made valid if it is not. */
  readonly name: string;
  /** The first start URL. */
  readonly start: string;
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
  return `# Crawl Studio task file. Design it against a real page: run "Crawl Studio: Open Preview" (or the
# "Preview" lens above a rule), pick a page, then click an element in the rendered page to get a selector
# and "Insert" it at the cursor. The schema documents every key: hover one, or press Ctrl+Space.
name: ${name}                      # also the queue name: each task is its own queue
start:
  - ${opts.start}
scope:
  maxPages: 100                    # stop enqueueing after this many pages
  maxDepth: 3                      # hops from a start URL
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
      - { selector: "a[rel=next]", to: list, priority: 1 }
      - { selector: "article a", to: detail }
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
