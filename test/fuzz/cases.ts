import { parseTask } from '../../src/core/task/parse';
import type { CrawlTask } from '../../src/core/task/model';
import { checkDecision, checkParseResult } from './properties';
import { caseRng, chance, int, pick, type Rng } from './rng';
import { taskInput } from './taskgen';
import { hostileHref } from './urlgen';

// One fuzz case of each kind, as a pure function of (seed, index): the worker thread runs them, the main thread
// regenerates one to save it when it hangs.

export type FuzzKind = 'task' | 'url';

export interface CaseOutcome {
  readonly violations: string[];
  /** Short label of what the case exercised, for the summary. */
  readonly label: string;
}

export function caseInput(kind: FuzzKind, seed: number, index: number): string {
  const r = caseRng(seed, index);
  if (kind === 'task') return taskInput(r);
  return JSON.stringify(urlCase(r));
}

export function runCase(kind: FuzzKind, seed: number, index: number): CaseOutcome {
  const r = caseRng(seed, index);
  if (kind === 'task') {
    const text = taskInput(r);
    let res;
    try {
      res = parseTask(text, 'fuzz.crawl.yaml');
    } catch (err) {
      return {
        violations: [`parseTask threw ${(err as Error).name}: ${(err as Error).message.slice(0, 200)}`],
        label: 'threw',
      };
    }
    const violations = checkParseResult(text, res);
    // Same input, same answer (10% of cases: it doubles the cost).
    if (chance(r, 0.1)) {
      const again = parseTask(text, 'fuzz.crawl.yaml');
      if (JSON.stringify(again.diagnostics) !== JSON.stringify(res.diagnostics))
        violations.push('diagnostics differ between two parses of the same text');
    }
    return { violations, label: res.task ? 'accepted' : 'rejected' };
  }
  const { links } = urlCase(r);
  const violations: string[] = [];
  let kept = 0;
  for (const task of urlTasks()) {
    for (const l of links) {
      try {
        const v = checkDecision(task, l.href, l.base, l.depth);
        violations.push(...v.map((m) => `[task ${task.name}] ${m}`));
      } catch (err) {
        violations.push(
          `[task ${task.name}] decideLink threw ${(err as Error).name}: ${(err as Error).message.slice(0, 200)} for ${JSON.stringify(l.href.slice(0, 120))}`,
        );
      }
    }
    kept++;
  }
  return { violations: [...new Set(violations)], label: `${links.length * kept} links` };
}

interface UrlCase {
  links: { href: string; base: string; depth: number }[];
}

function urlCase(r: Rng): UrlCase {
  const bases = [
    'http://example.com/dir/page.html',
    'http://127.0.0.1:8737/catalogue/page-1.html',
    'https://sub.example.org/a/b/',
  ];
  const links = Array.from({ length: 20 }, () => {
    const startHost = pick(r, ['example.com', '127.0.0.1:8737', 'sub.example.org']);
    let base = pick(r, bases);
    if (chance(r, 0.15)) {
      // A <base href> is page content too.
      try {
        base = new URL(hostileHref(r, startHost), base).href;
      } catch {
        // Unparseable base: the extractor falls back to the page URL, so does this.
      }
    }
    return { href: hostileHref(r, startHost), base, depth: int(r, 0, 12) };
  });
  return { links };
}

let tasks: CrawlTask[] | null = null;
/** Three scopes: the default (start hosts), allow patterns with deny, and allowPrivate on a private start host. */
export function urlTasks(): CrawlTask[] {
  if (tasks) return tasks;
  const make = (yaml: string) => {
    const res = parseTask(yaml, 'url-fuzz.crawl.yaml');
    if (!res.task) throw new Error(`URL fuzz task does not parse: ${res.diagnostics.map((d) => d.message).join('; ')}`);
    return res.task;
  };
  tasks = [
    make(
      `name: default-scope\nstart: [http://example.com/]\ncanonical: { dropParams: [utm_*, ref] }\nrules: [{name: a}]\n`,
    ),
    make(
      `name: allow-deny\nstart: [https://sub.example.org/a/]\nscope: { allow: ["https://*.example.org/**", "re:^http://example\\\\.com\\\\/\\\\w+"], deny: ["**/b/**"], maxDepth: 6 }\ncanonical: { stripTrailingSlash: true, sortQuery: false }\nrules: [{name: a}]\n`,
    ),
    make(`name: private-start\nstart: [http://127.0.0.1:8737/]\nscope: { maxDepth: 10 }\nrules: [{name: a}]\n`),
    make(
      `name: allow-private\nstart: [http://127.0.0.1:8737/]\nscope: { allowPrivate: true, allow: ["http://**"] }\nrules: [{name: a}]\n`,
    ),
  ];
  return tasks;
}
