import { formatLogLine, type LogFields, type LogFormat, type LogLevel } from '../core/logLine';
import type { CrawlStatus } from '../frontier/types';
import type { RunFailures } from '../observe/failures';
import type { Progress } from '../run/session';
import { queuedJobs } from '../observe/taskStatus';
import { progressLine } from './format';

// What `run` and `writer` print, in either form (issue 31, item 5): for people (the progress line, messages on
// their own lines, the summary), or with --log-format json one JSON object a line (time, level, task, run, worker,
// event, url, reason, message), the workers' own JSON lines passed through, so a log shipper reads the whole run.

export interface RunOutput {
  readonly format: LogFormat;
  /** A line for people; in JSON an event. `newline`: on a terminal, first end the progress line. */
  say(level: LogLevel, message: string, fields?: LogFields & { readonly newline?: boolean }): void;
  progress(p: Progress): void;
  /** A line a local worker wrote. */
  workerLine(pid: number, line: string): void;
  /** The summary: its lines for people; in JSON a `run-finished` event with the counts, and one event per failure reason. */
  summary(lines: readonly string[], status: CrawlStatus, failures: RunFailures | null, extra?: LogFields): void;
}

export function runOutput(format: LogFormat, task: string): RunOutput {
  let run: string | undefined;
  const json = (level: LogLevel, message: string, fields: LogFields = {}) =>
    process.stdout.write(`${formatLogLine('json', Date.now(), level, message, { task, run, ...fields })}\n`);
  const endOf = runEnds();
  if (format === 'json') {
    let lastProgress = 0;
    return {
      format,
      // `newline` is the terminal's; an undefined field is left out of the line.
      say: (level, message, fields = {}) => json(level, message, { ...fields, newline: undefined }),
      progress: ({ status, pagesPerSec, backlog, figures }) => {
        run = status.run?.run ?? run;
        const end = endOf(status);
        if (end === 'said' || (end === null && Date.now() - lastProgress < 2000)) return;
        lastProgress = Date.now();
        json('info', progressLine(status, pagesPerSec, 0, backlog, figures?.rate.label), {
          event: 'progress',
          ...counts(status),
          pagesPerSec: Math.round(pagesPerSec * 10) / 10,
          queue: queuedJobs(status.counts),
          backlog,
        });
      },
      workerLine: (pid, line) => {
        // A worker started by this run writes JSON already ($CRAWL_STUDIO_LOG_FORMAT); anything else is wrapped.
        if (line.startsWith('{')) {
          try {
            JSON.parse(line);
            process.stdout.write(`${line}\n`);
            return;
          } catch {
            // Not a log record: wrapped below.
          }
        }
        json('info', line, { event: 'worker-output', pid });
      },
      summary: (_lines, status, failures, extra = {}) => {
        run = status.run?.run ?? run;
        for (const g of failures?.groups ?? []) {
          if (g.kind !== 'failed') continue;
          const first = g.pages[0];
          json('warn', first?.message ?? g.reason, {
            event: 'failure-reason',
            reason: g.reason,
            count: g.count,
            url: first?.url,
          });
        }
        json('info', `crawl '${task}' finished`, { event: 'run-finished', ...counts(status), ...extra });
      },
    };
  }
  const tty = process.stdout.isTTY;
  let lastPrint = 0;
  return {
    format,
    say: (level, message, { newline } = {}) => {
      const text = newline ? `\n${message}` : message;
      if (level === 'info') console.log(text);
      else console.error(text);
    },
    progress: ({ status, pagesPerSec, elapsedMs, backlog, figures }) => {
      const end = endOf(status);
      if (end === 'said') return;
      const line = progressLine(status, pagesPerSec, elapsedMs, backlog, figures?.rate.label);
      if (tty) process.stdout.write(`\r\x1b[2K${line}`);
      else if (end === 'now' || Date.now() - lastPrint > 2000) {
        lastPrint = Date.now();
        process.stdout.write(line + '\n');
      }
    },
    // The workers' error lines (a failed login, once per session, with its status; a BullMQ worker error), their
    // autoscaling decisions with the reason (issue 36), the jobs they gave back after a lost connection (which
    // follow BullMQ's errors about it) and the supervisor's delay before replacing workers that fail to start: the
    // rest of a worker's log stays in the lines kept for an unexpected exit.
    workerLine: (pid, line) => {
      const m =
        /^\S+ (?:error (.*)|info (concurrency \d+ → \d+: .*)|warn (gave back .*|\d+ workers in a row .*))$/.exec(line);
      if (m) console.error(`\nworker ${pid}: ${m[1] ?? m[2] ?? m[3]}`);
    },
    summary: (lines) => {
      for (const line of lines) console.log(line);
    },
  };
}

function counts(status: CrawlStatus): Record<string, number> {
  const s = status.stats;
  return {
    done: s?.done ?? 0,
    failed: s?.failed ?? 0,
    skipped: Object.values(s?.skipped ?? {}).reduce((a, b) => a + b, 0),
    items: s?.items ?? 0,
  };
}

/**
 * A writer (and a scheduled task's `run`) stays up after a run ends, waiting for the next: an ended run's progress is
 * reported once ('now'), at once, and then not again ('said') until a run goes on (null), rather than every 2 s with
 * nothing in it moving but the clock.
 */
function runEnds(): (status: CrawlStatus) => 'now' | 'said' | null {
  let said: string | null = null;
  return (status) => {
    const ended = status.run?.state === 'finished' || status.run?.state === 'stopped' ? status.run.run : null;
    const end = ended === null ? null : ended === said ? 'said' : 'now';
    said = ended;
    return end;
  };
}
