// Why a session refuses to start or stops driving a run: each says what to do next, in the CLI's and the editor's
// words alike (both print the message as it is).
import type { CrawlTask } from '../core/task/model';
import type { RunInfo } from '../frontier/types';
import type { LeaseHolder } from '../frontier/runLease';

/** Another live process drives the task's run: this one refuses rather than resume or replace it unasked. */
export class RunInProgressError extends Error {
  constructor(
    readonly task: CrawlTask,
    readonly holder: LeaseHolder,
    fresh: boolean,
  ) {
    const since = new Date(holder.since).toISOString().replace('T', ' ').slice(0, 19);
    super(
      `task '${task.name}' is already running: ${holder.front} (pid ${holder.pid} on ${holder.host}, since ${since} UTC) drives its run. ` +
        `Add workers to that run with \`crawl-studio worker ${task.file}\`, or watch it with \`crawl-studio status ${task.file}\`. ` +
        (fresh
          ? 'To discard that run and start again anyway, add --force (its queue and progress are replaced; stored items are kept).'
          : 'To drive it from here instead, stop that process or add --force.'),
    );
    this.name = 'RunInProgressError';
  }
}

/** Another driver took this session's lease (`run --force`): this one stopped rather than run beside it. */
export class RunTakenOverError extends Error {
  constructor(
    readonly task: CrawlTask,
    readonly holder: LeaseHolder,
  ) {
    const since = new Date(holder.since).toISOString().replace('T', ' ').slice(0, 19);
    super(
      `task '${task.name}' was taken over: ${holder.front} (pid ${holder.pid} on ${holder.host}, since ${since} UTC) now drives its run ` +
        `(started with --force), so this process stopped its workers and left the run to it. Watch it with \`crawl-studio status ${task.file}\`.`,
    );
    this.name = 'RunTakenOverError';
  }
}

/** The run's state vanished from Redis while a session watched it: the crawl cannot go on where it was. */
export class RunLostError extends Error {
  constructor(
    readonly task: CrawlTask,
    readonly run: RunInfo,
    pagesBefore: number,
  ) {
    super(
      `Redis lost run ${run.run} of task '${task.name}': its state is gone (the server restarted without persistence, was ` +
        `flushed or evicted keys under memory pressure, or the task was deleted), so the crawl cannot continue where it was. ` +
        `${pagesBefore} pages had been fetched or failed; items already stored are kept. Running the task again starts a new ` +
        `run from its start URLs; give Redis persistence (appendonly yes) and maxmemory-policy noeviction to keep runs across restarts.`,
    );
    this.name = 'RunLostError';
  }
}
