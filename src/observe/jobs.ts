import { jobIdOf, type TaskPartitions } from '../frontier/partitions';
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
  if (!j) return null;
  return {
    id: j.id,
    queue: parts.task,
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
