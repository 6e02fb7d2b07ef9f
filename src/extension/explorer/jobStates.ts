// The job groups the explorer shows under a queue, in this order. Kept apart from queueModel.ts (which loads
// BullMQ) so the tree can name them without loading the engine. `skipped` is its own group (issue 23, item 4):
// to BullMQ a page robots.txt refused is a "completed" job, and it was listed among the fetched ones. 'frontier' is
// not a BullMQ state: pages waiting in the compact frontier, before they become jobs (src/observe/frontier.ts).
export const JOB_STATES = [
  'frontier',
  'waiting',
  'prioritized',
  'active',
  'delayed',
  'completed',
  'skipped',
  'failed',
] as const;
export type JobStateName = (typeof JOB_STATES)[number];
