import { BlockList, isIP } from 'node:net';
import { canonicalize, MAX_URL_LENGTH } from '../../src/core/url/canonical';
import { isLocalHostname } from '../../src/core/url/hosts';
import { matchesAny } from '../../src/core/url/patterns';
import { decideLink } from '../../src/core/url/scope';
import type { CrawlTask } from '../../src/core/task/model';
import type { ParseResult } from '../../src/core/task/parse';

// What must hold for every input, whatever it is. Each check returns a list of violations (empty: fine).

const MAX_TIMER_MS = 2 ** 31 - 1;
export const MAX_MESSAGE_CHARS = 4096;

export function checkParseResult(text: string, res: ParseResult): string[] {
  const out: string[] = [];
  const errors = res.diagnostics.filter((d) => d.severity === 'error');
  if (res.task === null && errors.length === 0) out.push('no task and no error diagnostic');
  if (res.task !== null && errors.length > 0) out.push('a task despite error diagnostics');
  for (const d of res.diagnostics) {
    if (typeof d.message !== 'string' || d.message.trim() === '') out.push('empty diagnostic message');
    else if (d.message.length > MAX_MESSAGE_CHARS)
      out.push(`diagnostic message of ${d.message.length} chars (${d.path}: ${d.message.slice(0, 60)}…)`);
    if (!(d.line >= 1 && d.column >= 1 && d.endLine >= d.line))
      out.push(`bad position ${d.line}:${d.column}-${d.endLine}:${d.endColumn}`);
    if (!(d.offset >= 0 && d.offset <= text.length && d.endOffset >= d.offset && d.endOffset <= text.length + 1))
      out.push(`bad offsets ${d.offset}-${d.endOffset} of ${text.length}`);
    if (d.severity !== 'error' && d.severity !== 'warning') out.push(`bad severity ${String(d.severity)}`);
  }
  if (res.task) out.push(...checkTaskUsable(res.task));
  return dedupe(out);
}

/** An accepted task must be one the engine can run: every number in the range where Node and Redis accept it. */
export function checkTaskUsable(t: CrawlTask): string[] {
  const out: string[] = [];
  const dur = (name: string, v: number) => {
    if (!Number.isFinite(v) || v < 0 || v > MAX_TIMER_MS)
      out.push(`${name} = ${v} ms is accepted but no timer can wait that long`);
  };
  dur('request.timeout', t.request.timeoutMs);
  dur('request.retries.delay', t.request.retries.delayMs);
  dur('politeness.perHost.delay', t.politeness.perHost.delayMs);
  if (t.politeness.rateLimit) dur('politeness.rateLimit.per', t.politeness.rateLimit.perMs);
  dur('store.flushInterval', t.store.flushMs);
  try {
    AbortSignal.timeout(t.request.timeoutMs);
  } catch (err) {
    out.push(
      `request.timeout ${t.request.timeoutMs}: the fetcher's timeout throws (${(err as Error).message.slice(0, 80)})`,
    );
  }
  const posInt = (name: string, v: number) => {
    if (!Number.isSafeInteger(v) || v < 1) out.push(`${name} = ${v} is not a usable whole number`);
  };
  if (!(t.request.maxBytes >= 1)) out.push(`request.maxBytes = ${t.request.maxBytes} lets no page through`);
  posInt('politeness.perHost.concurrency', t.politeness.perHost.concurrency);
  posInt('request.retries.attempts', t.request.retries.attempts);
  posInt('store.batchSize', t.store.batchSize);
  if (t.politeness.rateLimit) posInt('politeness.rateLimit.max', t.politeness.rateLimit.max);
  if (t.scope.maxPages !== null) posInt('scope.maxPages', t.scope.maxPages);
  if (!/^[a-z0-9][a-z0-9_-]{0,63}$/.test(t.name)) out.push(`task name '${t.name.slice(0, 40)}' is not queue-safe`);
  if (t.start.length === 0 && t.sitemaps.length === 0) out.push('no start URL and no sitemap');
  for (const s of t.sitemaps) {
    if (!/^https?:\/\//.test(s.url)) out.push(`sitemap ${s.url.slice(0, 60)} is not http(s)`);
    if (s.rule !== null && !t.rules.some((r) => r.name === s.rule))
      out.push(`sitemap routed to missing rule '${s.rule}'`);
    if (s.since && !Number.isFinite(s.since.ms)) out.push(`sitemap since ${s.since.ms} is not a time`);
  }
  for (const s of t.start) {
    if (!/^https?:\/\//.test(s.url)) out.push(`start URL ${s.url.slice(0, 60)} is not http(s)`);
    if (!t.rules.some((r) => r.name === s.rule)) out.push(`start URL routed to missing rule '${s.rule}'`);
  }
  if (t.rules.length === 0) out.push('no rules');
  for (const r of t.rules)
    for (const f of r.follow)
      if (f.to !== null && !t.rules.some((x) => x.name === f.to)) out.push(`follow to missing rule '${f.to}'`);
  return out;
}

// An oracle for "private", written independently of src/core/url/hosts.ts: Node's BlockList over the IPv4
// ranges, and the same ranges seen through every IPv6 form that the network maps to IPv4.
const V4_PRIVATE: [string, number][] = [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['127.0.0.0', 8],
  ['100.64.0.0', 10],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 3],
];
const oracle = new BlockList();
for (const [a, p] of V4_PRIVATE) {
  oracle.addSubnet(a, p, 'ipv4');
  const [w, x, y, z] = a.split('.').map(Number) as [number, number, number, number];
  const hi = ((w << 8) | x).toString(16);
  const lo = ((y << 8) | z).toString(16);
  oracle.addSubnet(`::ffff:${hi}:${lo}`, 96 + p, 'ipv6');
  oracle.addSubnet(`64:ff9b::${hi}:${lo}`, 96 + p, 'ipv6');
  oracle.addSubnet(`2002:${hi}:${lo}::`, 16 + p, 'ipv6');
}
for (const [a, p] of [
  ['::', 96],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
] as [string, number][])
  oracle.addSubnet(a, p, 'ipv6');

export function oracleSaysPrivate(hostname: string): boolean {
  const h = hostname
    .replace(/^\[|\]$/g, '')
    .toLowerCase()
    .replace(/\.$/, '');
  if (h === 'localhost' || h.endsWith('.localhost')) return true;
  const kind = isIP(h);
  if (kind === 4) return oracle.check(h, 'ipv4');
  if (kind === 6) return oracle.check(h, 'ipv6');
  return false;
}

/** Checks one link decision of a task against the rules every kept link must obey. */
export function checkDecision(task: CrawlTask, href: string, base: string, depth: number): string[] {
  const out: string[] = [];
  const d = decideLink(task, href, base, depth);
  if (!d.ok) return out;
  let u: URL;
  try {
    u = new URL(d.url);
  } catch {
    return [`kept an unparseable URL ${d.url.slice(0, 80)}`];
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') out.push(`kept scheme ${u.protocol}`);
  if (u.username || u.password) out.push('kept credentials');
  if (d.url.length > MAX_URL_LENGTH) out.push(`kept a URL of ${d.url.length} chars`);
  if (u.host !== d.host) out.push(`decision host ${d.host} differs from the URL's ${u.host}`);
  if (u.hash) out.push('kept a fragment');
  const startHost = task.scope.startHosts.includes(u.host);
  if (task.scope.allow.length === 0 && !startHost) out.push(`kept off-site ${u.host}`);
  if (task.scope.allow.length > 0 && !matchesAny(d.url, task.scope.allow))
    out.push('kept a URL no allow pattern matches');
  if (matchesAny(d.url, task.scope.deny)) out.push('kept a denied URL');
  if (!startHost && !task.scope.allowPrivate && (oracleSaysPrivate(u.hostname) || isLocalHostname(u.hostname))) {
    out.push(`kept private host ${u.hostname} (from ${JSON.stringify(href.slice(0, 120))})`);
  }
  const again = canonicalize(d.url, undefined, task.canonical);
  if (!again.ok) out.push(`canonical URL is refused when canonicalised again (${again.reason})`);
  else if (again.url !== d.url)
    out.push(`canonical form is not stable: ${d.url.slice(0, 100)} -> ${again.url.slice(0, 100)}`);
  return out;
}

function dedupe(list: string[]): string[] {
  return [...new Set(list)];
}
