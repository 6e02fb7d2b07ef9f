import { randomBytes } from 'node:crypto';
import type { Queue } from 'bullmq';
import type { CrawlTask } from '../core/task/model';
import { decideLink } from '../core/url/scope';
import { routeRule } from '../core/pipeline/page';
import { buildRequest } from '../core/request/build';
import { throughCuts } from '../redis/cuts';
import { scanKeys } from '../redis/nodes';
import { frontierArgs } from './scriptArgs';
import { bucketBitsFor } from './dedup';
import { TASKS_KEY } from './keys';
import { LAYOUT_FIELD, layoutToMeta } from './layout';
import { PageFlow } from './pageFlow';
import { readRun } from './partitions';
import { forceStamp } from './record';
import { readRunStats } from './stats';
import { stoppedRunRefusal } from './refused';
import { taskFingerprint } from '../core/task/fingerprint';
import {
  SCHEDULED_RUN_JOB,
  SCHEDULER_ID,
  type CrawlStats,
  type EnqueueOutcome,
  type FrontierLink,
  type RunInfo,
} from './types';

// The producer side of a crawl and its control plane: starting and resuming runs, enqueueing URLs a person asked
// for, pausing, stopping and deciding when a run has drained. Its page side (links queued exactly once across all
// workers, pages finished, the window) is PageFlow's (pageFlow.ts). Workers and UIs share this class.

/**
 * BullMQ's obliterate (its pause, then its script). When the connection drops after Redis ran the script and before
 * its reply came, ioredis sends the script again, and the second run finds the queue gone, its pause mark with it:
 * "Cannot obliterate non-paused queue" (seen in test/integration/connectionCut.test.ts with the cutter armed from the
 * start). The queue is empty then; pausing it again lets the call finish.
 */
async function obliterate(queue: Queue): Promise<void> {
  try {
    await queue.obliterate({ force: true });
  } catch (err) {
    if (!(err instanceof Error) || !err.message.includes('Cannot obliterate non-paused queue')) throw err;
    await queue.obliterate({ force: true });
  }
}

/** What startRun did: resumed the unfinished run, or began one (in place of a finished or stopped one, or the first). */
export interface StartedRun {
  readonly run: RunInfo;
  readonly resumed: boolean;
  /** The finished or stopped run this one replaced (its pages are fetched again); null when resumed or the first. */
  readonly replaced: string | null;
  readonly enqueued: number;
}

export class CrawlQueue extends PageFlow {
  async currentRun(): Promise<RunInfo | null> {
    return readRun(this.redis, this.taskName);
  }

  /**
   * Starts a run, or resumes the unfinished one (a crawl survives restarts of the CLI, the editor and Redis
   * with persistence). With `fresh`, any previous run's jobs and dedup state are dropped first. A run that
   * finished or was stopped (stopRun: the editor's Stop Crawl) is not resumed: a new run begins from the start URLs.
   */
  startRun(task: CrawlTask, opts: { fresh?: boolean } = {}): Promise<StartedRun> {
    // Cut short by a dropped connection (redis/cuts.ts), it starts again: a run left 'starting' is resumed, its
    // start URLs queued again as duplicates.
    return throughCuts(
      () => this.startOrResume(task, opts),
      () => undefined,
    );
  }

  private async startOrResume(task: CrawlTask, opts: { fresh?: boolean }): Promise<StartedRun> {
    await this.loadLayout();
    const previous = await this.currentRun();
    if (previous && !opts.fresh && (previous.state === 'running' || previous.state === 'starting')) {
      // A run of a version before partitions has no frontier run marker: give it one, or discover refuses its links.
      for (const p of this.partitions()) await this.redis.hsetnx(p.keys.frontier.meta, 'run', previous.run);
      if (previous.state === 'starting') await this.enqueueStart(task, previous);
      // Its driver's task from now on: an edited file resumed with is what its workers should run.
      await this.redis.hset(this.keys.meta, 'state', 'running', 'taskFingerprint', taskFingerprint(task));
      // Driven again: no longer "reopened", so a driver lost from now on reads as interrupted (observe/runPhase.ts).
      await this.redis.hdel(this.keys.meta, 'reopenedAt');
      await this.resume();
      await this.syncSchedule(task);
      return { run: { ...(await this.currentRun())!, state: 'running' }, resumed: true, replaced: null, enqueued: 0 };
    }
    if (previous) await this.forgetRun(previous.run);
    for (const p of this.partitions()) await obliterate(p.queue);
    // A stopped run left its queues paused (so remote workers stopped too): the new run's pages must flow.
    await this.setQueuesPaused(false);
    await this.clearFrontier();
    const started = await this.beginRun(task);
    await this.syncSchedule(task);
    return { ...started, resumed: false, replaced: previous?.run ?? null };
  }

  /**
   * The next occurrence of a recurring crawl (run by a worker when the job scheduler fires). The queue is kept,
   * scheduler included; the previous run's jobs and dedup sets go, so its pages are fetched again.
   */
  async startScheduledRun(task: CrawlTask): Promise<{ run: RunInfo; enqueued: number } | null> {
    const previous = await this.currentRun();
    if (previous && (previous.state === 'running' || previous.state === 'starting')) return null;
    if (previous) await this.forgetRun(previous.run);
    for (const p of this.partitions()) {
      await p.queue.clean(0, 0, 'completed');
      await p.queue.clean(0, 0, 'failed');
    }
    await this.clearFrontier();
    return this.beginRun(task);
  }

  private async beginRun(task: CrawlTask): Promise<{ run: RunInfo; enqueued: number }> {
    const run: RunInfo = {
      run: `${Date.now().toString(36)}${randomBytes(2).toString('hex')}`,
      state: 'starting',
      startedAt: Date.now(),
      finishedAt: null,
      pausedMs: 0,
      idleSince: null,
      bucketBits: bucketBitsFor(task.scope.maxPages),
      file: task.file,
      taskFingerprint: taskFingerprint(task),
    };
    await this.redis
      .multi()
      .del(this.keys.meta)
      .hset(this.keys.meta, {
        run: run.run,
        state: 'starting',
        startedAt: run.startedAt,
        bucketBits: run.bucketBits,
        file: task.file,
        taskFingerprint: run.taskFingerprint!,
        [LAYOUT_FIELD]: layoutToMeta(this.layout),
      })
      .exec();
    // Each partition's frontier names the run it belongs to: discover refuses links of any other (lua/discover.lua).
    for (const p of this.partitions()) await this.redis.hset(p.keys.frontier.meta, 'run', run.run);
    // Not in the MULTI: the list of tasks is in another hash slot than the task's keys (CROSSSLOT on a cluster).
    await this.redis.sadd(TASKS_KEY, task.name);
    const enqueued = await this.enqueueStart(task, run);
    await this.redis.hset(this.keys.meta, 'state', 'running');
    await this.event({ type: 'run-started', run: run.run });
    return { run: { ...run, state: 'running' }, enqueued };
  }

  /** Creates, updates or removes the task's job scheduler to match its `schedule`. */
  async syncSchedule(task: CrawlTask): Promise<void> {
    if (!task.schedule) {
      await this.queue.removeJobScheduler(SCHEDULER_ID);
      return;
    }
    const { cron, everyMs, timezone } = task.schedule;
    await this.queue.upsertJobScheduler(SCHEDULER_ID, cron ? { pattern: cron, tz: timezone } : { every: everyMs! }, {
      name: SCHEDULED_RUN_JOB,
      data: { url: '', rule: '', depth: 0, run: '' },
      opts: { removeOnComplete: true, removeOnFail: 100 },
    });
  }

  /** When the next scheduled run starts (ms since epoch), or null. */
  async nextScheduledRun(): Promise<number | null> {
    const s = await this.queue.getJobScheduler(SCHEDULER_ID);
    return s?.next ?? null;
  }

  private async enqueueStart(task: CrawlTask, run: RunInfo): Promise<number> {
    const links: FrontierLink[] = task.start.map((s) => ({
      url: s.url,
      host: new URL(s.url).host,
      rule: s.rule,
      depth: 0,
      priority: s.priority,
    }));
    // A sitemap is a job of its own: fetched under robots.txt and politeness like a page, retried like one, and
    // deduplicated with the pages (a sitemap named twice, by the task and by robots.txt, is read once).
    task.start.forEach((s, i) => {
      if (!s.request) return;
      // A start entry that sends a body or counts pages: its first request, built as a follow's would be.
      const built = buildRequest(s.request, {}, undefined, { start: i });
      if (!built.ok) return;
      const { request, series } = built.built;
      links[i] = { ...links[i]!, ...(request ? { request } : {}), ...(series ? { series } : {}) };
    });
    task.sitemaps.forEach((s, i) =>
      links.push({
        url: s.url,
        host: new URL(s.url).host,
        rule: s.rule ?? '',
        depth: 0,
        priority: s.priority,
        sitemap: i,
      }),
    );
    const res = await this.enqueueLinks(task, run, links);
    return res.filter((r) => r === 'enqueued').length;
  }

  /** Empties the frontier and the window's records (a run replaced: its BullMQ jobs go with obliterate or clean). */
  async clearFrontier(): Promise<void> {
    for (const p of this.partitions()) {
      for await (const batch of scanKeys(this.redis, p.keys.frontier.pattern)) await this.redis.unlink(...batch);
    }
  }

  /** Pages waiting in the frontier. */
  async frontierCount(): Promise<number> {
    const ns = await Promise.all(this.partitions().map((p) => this.redis.hget(p.keys.frontier.meta, 'n')));
    return ns.reduce((a, n) => a + Number(n ?? 0), 0);
  }

  /**
   * Enqueues URLs a person asked for (CLI, "Enqueue URL"). They are canonicalised and routed like links; with
   * `force` an already-seen URL is fetched again. A finished run reopens; a stopped one refuses (ControlRefused).
   */
  async enqueueUrls(
    task: CrawlTask,
    urls: readonly string[],
    opts: { force?: boolean; rule?: string; scoped?: boolean } = {},
  ): Promise<{ url: string; outcome: EnqueueOutcome | 'invalid' | 'dropped'; reason?: string }[]> {
    await this.loadLayout();
    const run = await this.currentRun();
    if (!run)
      throw new Error(
        `task '${task.name}' has never run on this Redis; start it first (crawl-studio run ${task.file})`,
      );
    if (run.state === 'stopped') throw stoppedRunRefusal(task.name, run.run, 'enqueue');
    // A URL enqueued after the crawl drained reopens the run: workers fetch it, the next session finalizes it.
    const reopen = async () => {
      if (run.state === 'finished') {
        // Its time since the end is idle until a driver resumes it, as a retry's reopening (observe/failures.ts).
        await this.redis
          .multi()
          .hset(
            this.keys.meta,
            'state',
            'running',
            'reopenedAt',
            String(Date.now()),
            'idleSince',
            String(run.finishedAt ?? Date.now()),
          )
          .unlink(this.keys.finalized(run.run))
          .exec();
      }
    };
    const out: { url: string; outcome: EnqueueOutcome | 'invalid' | 'dropped'; reason?: string }[] = [];
    const links: FrontierLink[] = [];
    const inCall = new Set<string>();
    for (const raw of urls) {
      const d = decideLink(task, raw, raw, 0);
      // A person may enqueue any http(s) URL; only malformed ones are refused.
      if (
        !d.ok &&
        (d.reason === 'invalid' || d.reason === 'scheme' || d.reason === 'credentials' || d.reason === 'too-long')
      ) {
        out.push({ url: raw, outcome: 'invalid', reason: d.reason });
        continue;
      }
      // Bulk lists (`enqueue --file`) are checked like links found on a page: a million-line file is not read
      // line by line by a person, so what scope or the rules would never crawl is counted as dropped, not queued.
      if (opts.scoped && !d.ok) {
        out.push({ url: raw, outcome: 'dropped', reason: d.reason });
        continue;
      }
      const url = d.url;
      // One discover call marks a URL seen once (a page's links come deduplicated): a repeat within the call is
      // already seen, not a second enqueue.
      if (inCall.has(url)) {
        out.push({ url, outcome: 'duplicate' });
        continue;
      }
      inCall.add(url);
      const routed = opts.rule ?? routeRule(task, url, null)?.name;
      if (opts.scoped && routed === undefined) {
        out.push({ url, outcome: 'dropped', reason: 'no-rule' });
        continue;
      }
      const rule = routed ?? task.rules[0]!.name;
      links.push({ url, host: new URL(url).host, rule, depth: 0, priority: null });
    }
    if (opts.force) {
      // Queued whether seen or not, each with a job id of its own (its first fetch's job may still be kept).
      if (links.length > 0) await reopen();
      await this.discover(task, run, links, null, forceStamp());
      for (const l of links) out.push({ url: l.url, outcome: 'enqueued' });
      return out;
    }
    const codes = await this.enqueueLinks(task, run, links);
    if (codes.includes('enqueued')) await reopen();
    links.forEach((l, i) => out.push({ url: l.url, outcome: codes[i]! }));
    return out;
  }

  /** The run's counters over the partitions of the layout in use. */
  async stats(run: string): Promise<CrawlStats> {
    return readRunStats(this.redis, this.taskName, run, this.layout);
  }

  // A task's job counts and status are read by observe/taskStatus.ts (readJobCounts, readTaskStatus), the one place
  // every view and the session read them.

  /**
   * 'won': this caller must finalize the run; 'pending': work remains; 'done': someone already finalized it. One
   * atomic script for a task in one partition (lua/drain.lua). Spread over several, each partition is checked in its
   * own slot between two readings of every partition's change counter (lua/drainPart.lua): unchanged counters mean
   * no page was queued into a partition after it was found empty, so all were empty at once.
   */
  async tryFinalize(task: CrawlTask, run: string, holdMs = 15_000): Promise<'won' | 'pending' | 'done'> {
    const parts = this.partitions();
    if (parts.length === 1) {
      const b = this.keys.bull;
      const r = await this.redis.csDrain(
        this.keys.meta,
        this.keys.finalized(run),
        b.wait,
        b.active,
        b.paused,
        b.delayed,
        b.prioritized,
        b.waitingChildren,
        run,
        holdMs,
        ...frontierArgs(task, 0),
      );
      return r === 1 ? 'won' : r === -1 ? 'done' : 'pending';
    }
    const [meta, flagTtl] = await Promise.all([
      this.redis.hmget(this.keys.meta, 'run', 'state'),
      this.redis.pttl(this.keys.finalized(run)),
    ]);
    if (meta[0] !== run || meta[1] !== 'running') return 'pending';
    if (flagTtl > 0) return 'done';
    const versions = () => Promise.all(parts.map((p) => this.redis.hget(p.keys.frontier.meta, 'v')));
    const before = await versions();
    for (const p of parts) {
      const b = p.keys.bull;
      const [pending] = await this.redis.csDrainPart(
        b.wait,
        b.active,
        b.paused,
        b.delayed,
        b.prioritized,
        b.waitingChildren,
        run,
        ...frontierArgs(task, 0, this.leaseMs, p.keys, { counted: true }),
      );
      if (pending > 0) return 'pending';
    }
    const after = await versions();
    if (after.some((v, i) => v !== before[i])) return 'pending';
    const r = await this.redis.csDrainFinal(this.keys.meta, this.keys.finalized(run), run, holdMs);
    return r === 1 ? 'won' : r === -1 ? 'done' : 'pending';
  }

  async markFinished(run: string, summary: Record<string, unknown>): Promise<void> {
    await this.redis.hset(this.keys.meta, { state: 'finished', finishedAt: Date.now() });
    await this.event({ type: 'run-finished', run, ...summary });
  }

  /**
   * Pauses the run (Pause Queue, the monitor's pause): no worker anywhere takes its pages; its state is kept for
   * resume(). The time until then is not counted in the run's duration (figures.ts runActiveMs).
   */
  async pause(): Promise<void> {
    await this.setQueuesPaused(true);
    await this.markIdle();
  }

  /**
   * The current run, for a process that joins it without driving it (`crawl-studio writer`): an interrupted run is
   * no longer idle from then on (endIdle), since the writer finishes it once the fleet's workers drain it.
   */
  async joinRun(task: Pick<CrawlTask, 'name'>): Promise<RunInfo> {
    await this.loadLayout();
    const run = await this.currentRun();
    if (!run) throw new Error(`task '${task.name}' has never run on this Redis: start it with crawl-studio run`);
    if (run.idleSince == null) return run;
    await this.endIdle();
    return (await this.currentRun()) ?? run;
  }

  /** Resumes a paused or interrupted run: its pages flow again and its idle time is added to `pausedMs`. */
  async resume(): Promise<void> {
    await this.setQueuesPaused(false);
    await this.endIdle();
  }

  /**
   * Ends the run's idle time (added to `pausedMs`) unless its queues are paused, without touching them: a
   * `crawl-studio writer` joining an interrupted run finishes it once the fleet's workers drain it, so the time from
   * then on is the crawl's.
   */
  async endIdle(): Promise<void> {
    if ((await this.redis.hexists(this.keys.bull.meta, 'paused')) === 1) return;
    const since = await this.redis.hget(this.keys.meta, 'idleSince');
    if (since)
      await this.redis
        .multi()
        .hincrby(this.keys.meta, 'pausedMs', Math.max(0, Date.now() - Number(since)))
        .hdel(this.keys.meta, 'idleSince')
        .exec();
  }

  /**
   * Marks the run idle from now (paused, or its driver interrupted: Ctrl-C, `crawl.stop()`), unless it already is:
   * the time until it resumes is left out of its duration.
   */
  async markIdle(): Promise<void> {
    const state = await this.redis.hget(this.keys.meta, 'state');
    if (state === 'running' || state === 'starting') await this.redis.hsetnx(this.keys.meta, 'idleSince', Date.now());
  }

  /**
   * Stop: ends the run `run` for good (the editor's Stop Crawl). Its queues are paused, so no worker anywhere takes
   * another of its pages; it is never finalized as finished (drain.lua only drains a running run), and the next
   * startRun begins a new run from the start URLs. False when the run is not the current one or is already over
   * (it finished first: then it is reported as finished, not stopped).
   */
  async stopRun(run: string): Promise<boolean> {
    const [current, state] = await this.redis.hmget(this.keys.meta, 'run', 'state');
    if (current !== run || (state !== 'running' && state !== 'starting')) return false;
    await this.setQueuesPaused(true);
    await this.redis.hset(this.keys.meta, { state: 'stopped', finishedAt: Date.now() });
    await this.event({ type: 'run-stopped', run });
    return true;
  }

  private async setQueuesPaused(paused: boolean): Promise<void> {
    for (const p of this.partitions()) await (paused ? p.queue.pause() : p.queue.resume());
  }

  async event(e: Record<string, unknown>): Promise<void> {
    await this.redis.xadd(this.keys.events, 'MAXLEN', '~', '1000', '*', 'e', JSON.stringify({ at: Date.now(), ...e }));
  }

  /** Drops a previous run's dedup sets (they are the bulk of a finished crawl's Redis memory). */
  private async forgetRun(run: string): Promise<void> {
    for (const p of this.partitions()) {
      for await (const batch of scanKeys(this.redis, p.keys.seenPattern(run))) await this.redis.unlink(...batch);
    }
    await this.redis.unlink(this.keys.finalized(run));
  }
}
