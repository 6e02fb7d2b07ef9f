// Every Redis key carries a hash tag, so that on a Redis Cluster the keys one Lua script or MULTI touches share a
// slot. A task's own keys (its run's meta, lease, events, sessions, metric history) share `{task}`; its per-page state
// (seen set, frontier, window, BullMQ queue, counters, items stream) is split into partitions (frontier/layout.ts),
// each under a tag of its own, the first being `{task}` itself, so a single node keeps one slot per task. BullMQ's
// own keys are `cs:{tag}:<task>:<type>`; ours use '#', a character task names cannot contain, so they never collide.

export const KEY_ROOT = 'cs';

/** Task names double as queue names (validated by the task schema). */
export function bullPrefix(task: string): string {
  return `${KEY_ROOT}:{${task}}`;
}

export function taskKeys(task: string) {
  const base = `${KEY_ROOT}:{${task}}:#`;
  return {
    /** Hash: current run id, state, started/finished times, dedup bucket bits, task file, layout (frontier/layout.ts). */
    meta: `${base}meta`,
    /** String: the process driving the task's current run (lua/lease.lua), JSON, with a TTL its holder renews. */
    lease: `${base}lease`,
    finalized: (run: string) => `${base}finalized:${run}`,
    /** Sliding window of recent request starts, for the task's global rate limit. */
    rate: `${base}rate`,
    /** Stream of notable events (run started/finished) for the CLI and the extension. */
    events: `${base}events`,
    /** Hash: one session of the pool (worker/sessions.ts): its id, pages, login state and cookies, one field each. */
    session: (slot: number) => `${base}session:${slot}`,
    /** String (TTL): the worker logging a session in; the others wait for it. */
    sessionLogin: (slot: number) => `${base}session:${slot}:login`,
    /**
     * Hash: each page's revisit record for conditional re-crawls (worker/revisits.ts), field = the URL's fingerprint,
     * kept across runs; REVISIT_RESTORED marks that the store's copy was loaded into it.
     */
    revisits: `${base}revisits`,
    /** Hash: a run's kept screenshots of rendered pages (frontier/screenshots.ts), `m:<url>` its facts, `j:<url>` the JPEG. */
    screenshots: (run: string) => `${base}shots:${run}`,
    /** Sorted set: the URLs of those screenshots by time, the oldest dropped first. */
    screenshotOrder: (run: string) => `${base}shots:${run}:order`,
    // The first partition's keys (frontier/layout.ts) are the task's own: on one node, the only partition.
    ...partitionKeys(task, task),
  };
}

/**
 * The keys of one partition of a task's per-page state (frontier/layout.ts), under hash tag `{tag}`: the tag of the
 * first partition is the task's name, so on a single node these are the task's keys.
 */
export function partitionKeys(task: string, tag: string) {
  const base = `${KEY_ROOT}:{${tag}}:#`;
  const bullBase = `${KEY_ROOT}:{${tag}}`;
  const bull = `${bullBase}:${task}:`;
  return {
    tag,
    /** BullMQ's key prefix for this partition's queue (queue name: the task's). */
    bullPrefix: bullBase,
    /** Hash: the run's counters added in this partition (readers sum the partitions). */
    stats: (run: string) => `${base}stats:${run}`,
    seenBucket: (run: string, bucket: number) => `${base}seen:${run}:${bucket.toString(16)}`,
    seenPattern: (run: string) => `${base}seen:${run}:*`,
    /** Stream of the partition's page records and items on their way to the store: never through the job queue. */
    items: `${base}items`,
    /** Hash "<host>\t<done|skipped|failed>" -> count of the pages finished in this partition (see metricsKeys). */
    hosts: (run: string) => `${base}metrics:${run}:hosts`,
    /** The compact frontier: the pages waiting for the window (see frontierKeys). */
    frontier: frontierKeys(`${base}f:`),
    bull: {
      wait: `${bull}wait`,
      active: `${bull}active`,
      paused: `${bull}paused`,
      delayed: `${bull}delayed`,
      /** BullMQ's job schedulers: a scheduled task's `schedule`, scored by its next run's time. */
      repeat: `${bull}repeat`,
      prioritized: `${bull}prioritized`,
      completed: `${bull}completed`,
      failed: `${bull}failed`,
      waitingChildren: `${bull}waiting-children`,
      meta: `${bull}meta`,
      stalled: `${bull}stalled`,
      /** A job's hash is `${job}<id>`, its lock `${job}<id>:lock`. */
      job: bull,
    },
  };
}

export type PartitionKeys = ReturnType<typeof partitionKeys>;

/**
 * The compact frontier's keys under `prefix` (lua/frontier.lua documents each). The scripts build the per-band and
 * per-host names themselves from the prefix, so these two functions must agree with it.
 */
export function frontierKeys(prefix: string) {
  return {
    prefix,
    /**
     * Hash: `n` (pages waiting in the frontier), `b:<band>` (pages waiting in one priority band), `v` (a counter of
     * every change: drain detection across partitions reads it before and after).
     */
    meta: `${prefix}meta`,
    /** Sorted set: the bands that hold waiting pages, scored by their priority (1 first). */
    bands: `${prefix}bands`,
    /** Sorted set: a band's hosts with waiting pages, scored by when the task may next take one of their pages. */
    ready: (band: string) => `${prefix}ready:${band}`,
    /** List: a host's waiting pages in a band, oldest first, as short records (frontier/record.ts). */
    queue: (band: string, host: string) => `${prefix}q:${band}:${host}`,
    /** Hash: host -> when the task may next take one of its pages (ms since EPOCH, see frontier.lua). */
    next: `${prefix}next`,
    /** Hash: host -> how many of its pages are in the window. */
    win: `${prefix}win`,
    /** Hash: page id -> "<band> <host> <record>": the window, pages handed to BullMQ and not finished yet. */
    transit: `${prefix}transit`,
    /** Sorted set: page id -> until when the process that took it from the frontier may still be adding its job. */
    lease: `${prefix}lease`,
    pattern: `${prefix}*`,
  };
}

export type FrontierKeys = ReturnType<typeof frontierKeys>;

/** Keys of a run's metrics (observe/metrics.ts; a job's outcome: frontier/outcomes.ts), in the task's hash slot like the rest of its keys. */
export function metricsKeys(task: string, run: string) {
  const base = `${taskKeys(task).meta.slice(0, -'meta'.length)}metrics:${run}:`;
  return {
    tick: `${base}tick`,
    tier: (name: string) => `${base}${name}`,
    /** Hash "<host>\t<done|skipped|failed>" -> count, kept by the workers as they finish jobs. */
    hosts: `${base}hosts`,
    /** Set of the jobs counted as failed for good in the run's stats (lua/countFailed.lua: each counted once). */
    failedJobs: `${base}failed-jobs`,
    /** Set of the jobs counted as skipped (lua/countSkipped.lua: each counted once). */
    skippedJobs: `${base}skipped-jobs`,
    /** Recent URLs of skipped jobs, per reason (failed jobs carry their own in BullMQ). */
    skippedUrls: (reason: string) => `${base}skipped:${reason}`,
    /** The run's latest skipped pages, newest first, as JSON (frontier/outcomes.ts countSkipped; observe/failures.ts reads them), capped. */
    skippedLog: `${base}skipped-log`,
  };
}

/** What a finished job counts as in its host's tally. */
export type HostOutcome = 'done' | 'skipped' | 'failed';

/** The field of a run's per-host tally that a job for `host` with that outcome adds 1 to. */
export function hostTallyField(host: string, outcome: HostOutcome): string {
  return `${host}\t${outcome}`;
}

/** Shared by every task: politeness towards a host holds whichever task is crawling it. */
export function hostKeys(host: string) {
  const base = `${KEY_ROOT}:{host:${host}}:`;
  return {
    /** String: the earliest time the next request may start (the last start + the host's delay). */
    next: `${base}next`,
    /** Sorted set: in-flight request leases, scored by expiry. */
    active: `${base}active`,
    /** String: the earliest start not yet promised to a waiting page (lua/politeness.lua). */
    horizon: `${base}horizon`,
    /** Sorted set: "<task>|<job id>" of pages set aside until their promised start, scored by it. */
    promises: `${base}promises`,
    /** String (TTL): "<lease token>|<delay ms>" of a grant whose request is not sent yet (lua/politeness.lua, lua/sent.lua). */
    sending: `${base}sending`,
  };
}

/** The fleet's copy of an origin's robots.txt; its fetch lock is `<key>:lock`, in the same hash slot. */
export function robotsKey(origin: string): string {
  return `${KEY_ROOT}:robots:{${origin}}`;
}

/** Set of task names known to this Redis, for explorers. */
export const TASKS_KEY = `${KEY_ROOT}:tasks`;
export const WORKERS_KEY = `${KEY_ROOT}:workers`;

/** The field of a task's revisits hash that says the store's records were restored into it (run/revisitRestore.ts). */
export const REVISIT_RESTORED = '~restored';
