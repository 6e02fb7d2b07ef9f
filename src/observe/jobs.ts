import { jobIdOf, type PageJob, type TaskPartitions } from '../frontier/partitions';
import type { PageJobData, PageJobResult } from '../frontier/types';

// A job as the editor's Show Job opens it (a stored row's page, a Find URL finding, the explorer's job), read from
// whichever of the task's partitions holds it.

export interface JobRecord {
  readonly id: string | undefined;
  readonly queue: string;
  readonly state: string;
  readonly data: PageJobData;
  readonly attemptsMade: number;
  readonly failedReason: string | undefined;
  readonly stacktrace: readonly string[] | null;
  readonly returnvalue: PageJobResult | null;
  readonly timestamp: number;
  readonly processedOn: number | undefined;
  readonly finishedOn: number | undefined;
}

/** The job `jobId` of the task, as Show Job shows it, from the partition its id names; null when no queue keeps it. */
export async function readJobRecord(parts: TaskPartitions, jobId: string): Promise<JobRecord | null> {
  const j = await parts.job(jobId);
  return j ? jobRecordOf(j, parts.task) : null;
}

/** A BullMQ job of the task's queue as a record (the explorer holds the job itself). */
export async function jobRecordOf(j: PageJob, queue: string): Promise<JobRecord> {
  return {
    id: j.id,
    queue,
    state: await j.getState(),
    data: j.data,
    attemptsMade: j.attemptsMade,
    failedReason: j.failedReason,
    stacktrace: j.stacktrace,
    returnvalue: j.returnvalue,
    timestamp: j.timestamp,
    processedOn: j.processedOn,
    finishedOn: j.finishedOn,
  };
}

/** The job that fetched the page at canonical `url` in `run` (a stored row's page); null when no longer kept. */
export function readPageJob(parts: TaskPartitions, run: string, url: string): Promise<JobRecord | null> {
  return readJobRecord(parts, jobIdOf(run, url));
}

/**
 * A job as a person reads it (Show Job Data, from the explorer, a stored row or a Find URL finding): times as ISO
 * dates with how long each step took, the error first, each stack trace as its lines (one string of `\n`-joined
 * frames was shown as one long line), issue 32 item 7.
 */
export function jobDocument(r: JobRecord): Record<string, unknown> {
  const iso = (t: number | undefined) => (t ? new Date(t).toISOString() : null);
  const seconds = (from: number | undefined, to: number | undefined) =>
    from && to ? `${((to - from) / 1000).toFixed(1)} s` : null;
  return {
    id: r.id,
    queue: r.queue,
    state: r.state,
    url: r.data.url,
    ...(r.failedReason ? { error: r.failedReason } : {}),
    attemptsMade: r.attemptsMade,
    times: {
      queued: iso(r.timestamp),
      started: iso(r.processedOn),
      finished: iso(r.finishedOn),
      waited: seconds(r.timestamp, r.processedOn),
      took: seconds(r.processedOn, r.finishedOn),
    },
    returnvalue: r.returnvalue,
    data: r.data,
    ...(r.stacktrace?.length
      ? {
          stacktraces: r.stacktrace.map((st) =>
            st
              .split('\n')
              .map((l) => l.trim())
              .filter(Boolean),
          ),
        }
      : {}),
  };
}
