// What a run's state refuses to have done to it, in the words every front end shows (the CLI prints them and exits 1,
// the web monitor answers 409 with them, the editor shows them). Here, beside the frontier, because the refusals are
// made where the work is done (CrawlQueue.enqueueUrls, retryFailedJobs, frontier/control.ts), never by a front end.

/** A control or a change the run's state refuses, in words that say why. */
export class ControlRefused extends Error {}

/**
 * Stop ends a run for good (its queue stays paused, the next start begins a new run). Adding a URL or retrying a
 * failed page reopened it, and with it every page it had left waiting: Resume is refused on a stopped run, and this
 * was the way around it.
 */
export function stoppedRunRefusal(task: string, run: string, refused: 'enqueue' | 'retry'): ControlRefused {
  const what = refused === 'enqueue' ? 'no URL is added to it' : 'its failed pages are not retried';
  return new ControlRefused(
    `run ${run} of '${task}' was stopped, and Stop ends a run for good: ${what}. ` +
      'Start the task again (Start Crawl, `crawl-studio run`) to begin a new run from its start URLs.',
  );
}
