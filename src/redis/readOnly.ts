// A write sent to a read-only replica, in the words every front end says it with (check.ts's cause and hint, the
// CLI, the monitor, the editor). No import: the editor's activation bundle loads this without ioredis.

/** The cause, as a connection check says it: "cannot connect to redis://…: a read-only replica (…)". */
export const READ_ONLY_CAUSE = 'a read-only replica';

/** What to do about it. */
export const READ_ONLY_HINT =
  'a crawl writes to Redis: name its primary (a replica gives it as master_host and master_port in INFO replication), or the sentinels (redis+sentinel://), which find the current primary';

/** A write sent to a read-only replica (a wrong target, or a primary demoted by a failover): READONLY. */
export function isReadOnlyError(err: unknown): err is Error {
  return err instanceof Error && /^READONLY\b/.test(err.message);
}

/** A READONLY met by a command: "Redis refused a write: a read-only replica; <name its primary …>". */
export function readOnlyText(): string {
  return `Redis refused a write: ${READ_ONLY_CAUSE}; ${READ_ONLY_HINT}`;
}
