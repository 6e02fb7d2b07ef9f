import { UnrecoverableError, type Job } from 'bullmq';
import { readsAsJson } from '../core/pipeline/page';
import { isJsonContentType } from '../core/extract/json';
import { bodyLabel } from '../core/request/body';
import type { CrawlTask, PageRule } from '../core/task/model';
import type { FailureReason } from '../core/task/failureReasons';
import type { CrawlQueue } from '../frontier/crawl';
import { countFailed } from '../frontier/outcomes';
import type { PageJobData, PageJobResult, RunInfo } from '../frontier/types';
import type { Redis } from '../redis/connect';
import { pageEntry } from '../store/buffer';
import type { PageRecord } from '../store/types';
import { AnalysisError, type AnalysedPage, type PageAnalyser } from './analysis';
import { factsOfFetch, type FetchedPage } from './fetcher';
import { markFailure } from './pageFailure';
import { warningCounters, warningLines } from './pageWarnings';
import type { Revisits } from './revisits';
import type { RevisitRecord } from '../core/pipeline/revisit';

// What a fetched page becomes: a 304's revisit, a page that is not HTML recorded as it is, or a page parsed and
// extracted; each finished (its record for the store, its counters, its links queued) in one call to Redis.

type PageJob = Job<PageJobData, PageJobResult>;

export interface FinishDeps {
  readonly task: CrawlTask;
  readonly crawl: CrawlQueue;
  readonly redis: Redis;
  readonly analyser: PageAnalyser;
  readonly revisits: Revisits | null;
  readonly log: (level: 'info' | 'warn' | 'error', message: string) => void;
}

/** A page as fetched, with what its finish needs to know of its request. */
export interface Fetched {
  readonly job: PageJob;
  readonly rule: PageRule;
  readonly page: FetchedPage;
  readonly host: string;
  /** The page's revisit record, when it was asked for conditionally. */
  readonly known: RevisitRecord | null;
  readonly fetchedAt: number;
}

/** The run a worker's page belongs to, as the frontier's scripts need it (its id and its dedup bucket bits). */
export async function runningInfo(crawl: CrawlQueue, run: string): Promise<RunInfo> {
  return {
    run,
    bucketBits: await bucketBits(crawl, run),
    state: 'running',
    startedAt: 0,
    finishedAt: null,
    file: null,
  };
}

export class PageFinisher {
  /** Hosts and rules whose page warnings this process has logged (pageWarnings.ts): each is said once. */
  private readonly warned = new Set<string>();

  constructor(private readonly deps: FinishDeps) {}

  async finish(f: Fetched): Promise<PageJobResult> {
    if (f.known && f.page.status === 304) return this.unchanged(f, f.known);
    // A JSON response is read as JSON by a rule that reads JSON (or says `format: json`); `format: html` reads any
    // response as HTML; anything else that is not HTML is recorded and not extracted, as always.
    const json = readsAsJson(f.rule, isJsonContentType(f.page.contentType));
    if (!json && !f.page.isHtml && f.rule.format !== 'html') return this.notHtml(f);
    return this.analysed(f, await this.analyse(f, json));
  }

  /** Unchanged since the last full fetch: nothing to extract; its items stay stored, its links are followed again. */
  private async unchanged({ job, rule, page, host, fetchedAt }: Fetched, known: RevisitRecord): Promise<PageJobResult> {
    const { task, crawl } = this.deps;
    const same = await this.deps.revisits!.unchanged(job.data, rule, known, page);
    const runInfo = await runningInfo(crawl, job.data.run);
    const rec: PageRecord = {
      ...record(task.name, job.data, 304, fetchedAt, page.contentType, page.bytes, [], []),
      revisit: same.record,
    };
    const counters: Record<string, number> = {
      done: 1,
      unchanged: 1,
      'unchanged-items': known.items,
      bytes: page.bytes,
    };
    for (const [reason, n] of Object.entries(same.dropped)) counters[`dropped:${reason}`] = n;
    await crawl.finishPage(task, runInfo, String(job.id), same.kept, { entry: pageEntry(rec), counters, host });
    return { outcome: 'done', status: 304, items: 0, links: same.kept.length, reason: 'unchanged' };
  }

  /** Neither HTML nor read as JSON: recorded, not extracted. */
  private async notHtml({ job, page, host, fetchedAt }: Fetched): Promise<PageJobResult> {
    const { task, crawl } = this.deps;
    // The page record goes to the store with the counters, in one call: durable together (see store/buffer.ts).
    const rec = record(task.name, job.data, page.status, fetchedAt, page.contentType, page.bytes, [], []);
    await crawl.completePage(task, job.data.run, String(job.id), {
      entry: pageEntry(rec),
      counters: { done: 1, nonhtml: 1, bytes: page.bytes },
      host,
    });
    return { outcome: 'non-html', status: page.status, items: 0, links: 0, reason: page.contentType ?? undefined };
  }

  /** Parsed and extracted (analysis.ts); a page that cannot be is counted, failed, and not retried. */
  private async analyse({ job, rule, page, fetchedAt }: Fetched, json: boolean): Promise<AnalysedPage> {
    const { task, redis, analyser } = this.deps;
    const { url, depth, run } = job.data;
    try {
      return await analyser.analyse({
        task,
        facts: factsOfFetch(url, page, fetchedAt),
        html: page.body,
        rule: rule.name,
        depth,
        ...(json ? { json } : {}),
        ...(job.data.series ? { series: job.data.series } : {}),
      });
    } catch (err) {
      // The page itself is the problem (too deep, too slow, too big to extract): counted, failed, not retried.
      const kind = err instanceof AnalysisError ? err.kind : 'error';
      const group: FailureReason = kind === 'error' ? 'parse' : `parse-${kind}`;
      await countFailed(redis, task.name, run, { id: String(job.id), url }, group);
      await markFailure(job, group, page.status);
      throw new UnrecoverableError(err instanceof Error ? err.message : String(err));
    }
  }

  /**
   * The links are queued and the page finished (its record for the store, its counters, its job marked done and its
   * page out of the window) in one script call, which also fills the window (frontier/pageFlow.ts finishPage).
   */
  private async analysed(f: Fetched, outcome: AnalysedPage): Promise<PageJobResult> {
    const { task, crawl, revisits } = this.deps;
    const { job, rule, page, host, fetchedAt } = f;
    const runInfo = await runningInfo(crawl, job.data.run);
    const kept =
      revisits && job.data.request === undefined
        ? await revisits.remember(job.data, rule, page, outcome.kept, outcome.items.length)
        : undefined;
    const rec = record(
      task.name,
      job.data,
      page.status,
      fetchedAt,
      page.contentType,
      page.bytes,
      outcome.items,
      outcome.problems,
      kept,
    );
    const counters = this.counters(f, outcome);
    await crawl.finishPage(task, runInfo, String(job.id), outcome.kept, { entry: pageEntry(rec), counters, host });
    if (outcome.problems.length > 0) {
      const first = outcome.problems[0]!;
      this.deps.log(
        'warn',
        `${job.data.url}: ${outcome.problems.length} item problem(s), first: ${first.type}[${first.index}] ${first.message}`,
      );
    }
    return { outcome: 'done', status: page.status, items: outcome.items.length, links: outcome.kept.length };
  }

  /** An extracted page's counters: its items and problems, its links dropped by reason, its warnings. */
  private counters({ job, rule, page, host }: Fetched, outcome: AnalysedPage): Record<string, number> {
    const counters: Record<string, number> = {
      done: 1,
      bytes: page.bytes,
      items: outcome.items.length,
      problems: outcome.problems.length,
    };
    let links = outcome.kept.length;
    for (const [reason, n] of Object.entries(outcome.droppedByReason)) {
      counters[`dropped:${reason}`] = n;
      if (reason === 'repeat') continue;
      counters[`rule-dropped:${rule.name}:${reason}`] = n;
      links += n;
    }
    // Per rule, so the run summary can say "rule list: 11 of 11 links dropped (pattern …)" (issue 21, item 1).
    if (links > 0) counters[`rule-links:${rule.name}`] = links;
    Object.assign(counters, warningCounters(page, host, rule.name));
    for (const line of warningLines(page, job.data.url, host, rule.name, this.warned)) this.deps.log('warn', line);
    return counters;
  }
}

const bucketBitsCache = new Map<string, number>();
async function bucketBits(crawl: CrawlQueue, run: string): Promise<number> {
  let bits = bucketBitsCache.get(run);
  if (bits === undefined) {
    const info = await crawl.currentRun();
    bits = info && info.run === run ? info.bucketBits : 12;
    bucketBitsCache.set(run, bits);
  }
  return bits;
}

function record(
  task: string,
  data: PageJobData,
  status: number | null,
  fetchedAt: number,
  contentType: string | null,
  bytes: number,
  items: PageRecord['items'],
  problems: PageRecord['problems'],
  revisit?: PageRecord['revisit'],
): PageRecord {
  const request = data.request
    ? { method: data.request.method, ...(data.request.body ? { body: bodyLabel(data.request.body) } : {}) }
    : {};
  const rec: PageRecord = {
    task,
    run: data.run,
    url: data.url,
    ...request,
    rule: data.rule,
    depth: data.depth,
    status,
    fetchedAt,
    contentType,
    bytes,
    items,
    problems,
  };
  return revisit ? { ...rec, revisit } : rec;
}
