// The task of the many-host tests (broad crawls, a crawl spread over a cluster's partitions): every page follows
// every link on it and is one item, keyed by its heading. Tests state what they are about (the hosts, politeness,
// the store); the rest stays one text, here.

export interface LinkedPagesTaskOptions {
  readonly name: string;
  /** Start URLs, one per host. */
  readonly start: readonly string[];
  readonly perHost: { readonly concurrency: number; readonly delay?: string };
  /** The store's URL; omitted, the task's default. */
  readonly store?: string;
}

export function linkedPagesTask(o: LinkedPagesTaskOptions): string {
  return [
    `name: ${o.name}`,
    `start: [${o.start.join(', ')}]`,
    `politeness: { perHost: { concurrency: ${o.perHost.concurrency}${o.perHost.delay ? `, delay: ${o.perHost.delay}` : ''} } }`,
    ...(o.store ? [`store: { url: "${o.store}" }`] : []),
    'rules:',
    '  - name: page',
    '    match: ["**"]',
    '    follow:',
    '      - selector: a',
    '        to: page',
    '    items:',
    '      - type: page',
    '        key: [title]',
    '        fields:',
    '          title: h1',
    '',
  ].join('\n');
}
