// Flags shared by `crawl-studio worker` and the worker processes the CLI and the extension spawn, so both
// accept exactly the same options.

export interface WorkerFlags {
  readonly redis: string;
  readonly concurrency: number;
  readonly lockDurationMs?: number;
  readonly stalledIntervalMs?: number;
}

export function workerArgs(taskFiles: readonly string[], flags: WorkerFlags): string[] {
  const args = [...taskFiles, '--redis', flags.redis, '--concurrency', String(flags.concurrency)];
  if (flags.lockDurationMs !== undefined) args.push('--lock-duration', String(flags.lockDurationMs));
  if (flags.stalledIntervalMs !== undefined) args.push('--stalled-interval', String(flags.stalledIntervalMs));
  return args;
}

export const WORKER_FLAG_SPEC = {
  redis: { type: 'string' },
  concurrency: { type: 'string', short: 'c' },
  'lock-duration': { type: 'string' },
  'stalled-interval': { type: 'string' },
} as const;

export function positiveInt(value: string | undefined, name: string, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new Error(`--${name} must be a whole number of at least 1, not '${value}'`);
  return n;
}
