// The exit codes of `crawl-studio`, one constant each, documented in README ("Exit codes") from EXIT_CODE_DOCS, so
// a script or a supervisor (systemd, Kubernetes) can tell "fix the command line" from "Redis is down" from
// "the crawl ran and a page failed". The Redis classes say what to check: the address, the name, the password…

export const EXIT = {
  /** Done; a crawl that ran to the end (pages may have failed: `failures` lists them). */
  OK: 0,
  /** The command ran and found something wrong: a check failed (`validate`, `test`), a bad input line, an error. */
  FAILED: 1,
  /** The command line or the task file is wrong (an unknown option, a missing argument, a malformed Redis target). */
  USAGE: 2,
  /** No Redis was named and `redis-server` was not found to start a private one. */
  REDIS_NOT_INSTALLED: 3,
  /** Nothing answers at the Redis target: connection refused, or no answer in time. */
  REDIS_UNREACHABLE: 4,
  /** The Redis target's host name does not resolve. */
  REDIS_NAME: 5,
  /** Redis refused the credentials (wrong password or user, or a password is required). */
  REDIS_AUTH: 6,
  /** TLS failed (a TLS target on a plain port, a certificate not trusted, or the reverse). */
  REDIS_TLS: 7,
  /**
   * The target is not the deployment named: a Cluster node for a plain client or the reverse, an unknown Sentinel
   * master, a read-only replica for a command that writes.
   */
  REDIS_TOPOLOGY: 8,
  /** Stopped by Ctrl-C or SIGTERM (128 + SIGINT); the run resumes on the next `run`. */
  INTERRUPTED: 130,
} as const;

export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** One line per code, for README's table and `crawl-studio --help`. */
export const EXIT_CODE_DOCS: readonly (readonly [ExitCode, string])[] = [
  [
    EXIT.OK,
    'done (a crawl that ran to the end, even with failed pages: see `failures`; or whose run was stopped from the monitor or an editor)',
  ],
  [EXIT.FAILED, 'the command failed or found a problem (validate, test, a bad enqueue line, a run that failed)'],
  [EXIT.USAGE, 'wrong command line, task file or Redis target'],
  [EXIT.REDIS_NOT_INSTALLED, 'no Redis named and redis-server not installed'],
  [EXIT.REDIS_UNREACHABLE, 'Redis unreachable: connection refused or timed out'],
  [EXIT.REDIS_NAME, 'Redis host name not resolved'],
  [EXIT.REDIS_AUTH, 'Redis authentication failed, or the ACL user may not run a command the crawl needs'],
  [EXIT.REDIS_TLS, 'Redis TLS handshake failed'],
  [
    EXIT.REDIS_TOPOLOGY,
    'Redis is not the deployment named (Cluster vs. single node, unknown Sentinel master, a read-only replica)',
  ],
  [EXIT.INTERRUPTED, 'stopped by Ctrl-C or SIGTERM (the run resumes with the same command)'],
];
