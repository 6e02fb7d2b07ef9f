// The job states the explorer shows under a queue, in this order. Kept apart from queueModel.ts (which loads
// BullMQ) so the tree can name them without loading the engine.
export const JOB_STATES = ['waiting', 'prioritized', 'active', 'delayed', 'completed', 'failed'] as const;
export type JobStateName = (typeof JOB_STATES)[number];
