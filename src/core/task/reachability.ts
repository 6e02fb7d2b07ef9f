import type { CrawlTask } from './model';
import { matchesAny } from '../url/patterns';

// Warnings for task files that parse but cannot crawl what they describe (issue 21, item 2): a scope.allow that no
// start URL passes, rules nothing routes to, follows whose links no rule takes, match patterns for hosts the scope
// never reaches. Each is a one-page crawl that exits 0; the warning is in `validate` and in the editor, at the
// field to fix.

interface Sink {
  atPath(path: (string | number)[], message: string, severity?: 'error' | 'warning', key?: string): void;
}

const quoteList = (xs: readonly { source: string }[]) => xs.map((x) => `'${x.source}'`).join(', ');

export function checkReachability(task: CrawlTask, diags: Sink): void {
  const starts = [...task.start.map((s) => s.url), ...task.sitemaps.map((s) => s.url)];
  const routedByMatch = task.rules.filter((r) => r.match.length > 0);

  if (
    task.scope.allow.length > 0 &&
    task.start.length > 0 &&
    !task.start.some((s) => matchesAny(s.url, task.scope.allow))
  ) {
    diags.atPath(
      ['scope', 'allow'],
      `no pattern here matches a start URL (${task.start[0]!.url}): links to pages like the start pages are dropped as 'pattern'. ` +
        `A pattern starting with '/' is matched against the path (and query), any other glob against the whole URL`,
      'warning',
    );
  }

  // A match pattern written for one host, when the scope is the start hosts: every link it would route is off-site.
  if (task.scope.allow.length === 0) {
    task.rules.forEach((r, ri) =>
      r.match.forEach((p, pi) => {
        const host = /^[a-zA-Z][a-zA-Z0-9+.-]*:\/\/([^/*?]+)\//.exec(p.source)?.[1];
        if (host !== undefined && !task.scope.startHosts.includes(host)) {
          diags.atPath(
            ['rules', ri, 'match', pi],
            `'${p.source}' is for host ${host}, which is not a start host (${task.scope.startHosts.join(', ')}) and scope.allow is not set: links it would route are dropped as 'offsite'. For any host the scope allows, write a path: '${p.source.replace(/^[^:]+:\/\/[^/]+/, '')}'`,
            'warning',
          );
        }
      }),
    );
  }

  task.rules.forEach((r, ri) =>
    r.follow.forEach((f, fi) => {
      if (f.to === null && routedByMatch.length === 0) {
        diags.atPath(
          ['rules', ri, 'follow', fi],
          `this follow has no 'to' and no rule has 'match', so every link it finds is dropped (no-rule): add 'to: <rule>' here, or 'match' to the rule that should take its links`,
          'warning',
        );
      }
    }),
  );

  // Rules reachable from the start: start URLs and sitemaps name (or route to) rules, follows lead on.
  const byName = new Map(task.rules.map((r) => [r.name, r]));
  const reached = new Set<string>();
  const queue: string[] = [];
  const reach = (name: string) => {
    if (!reached.has(name) && byName.has(name)) {
      reached.add(name);
      queue.push(name);
    }
  };
  for (const s of task.start) reach(s.rule);
  for (const s of task.sitemaps) {
    if (s.rule !== null) reach(s.rule);
    else routedByMatch.forEach((r) => reach(r.name));
  }
  while (queue.length > 0) {
    const r = byName.get(queue.shift()!)!;
    for (const f of r.follow) {
      if (f.to !== null) reach(f.to);
      else routedByMatch.forEach((m) => reach(m.name));
    }
  }
  // A sitemap that can route to no rule has its own warning (parse.ts); its rules' "never reached" would repeat it.
  if (starts.length === 0 || (routedByMatch.length === 0 && task.sitemaps.some((s) => s.rule === null))) return;
  task.rules.forEach((r, ri) => {
    if (reached.has(r.name)) return;
    const why =
      r.match.length === 0
        ? `no start URL, sitemap or follow 'to' names it, and it has no 'match'`
        : `its 'match' (${quoteList(r.match)}) is used only for links of a follow without 'to', and no rule reached from the start pages has one`;
    diags.atPath(
      ['rules', ri],
      `rule '${r.name}' can never be reached: ${why} (\`crawl-studio enqueue --rule ${r.name}\` can still send pages to it)`,
      'warning',
      'name',
    );
  });
}
