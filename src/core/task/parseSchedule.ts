import { CronExpressionParser } from 'cron-parser';
import type { CrawlTask } from './model';
import { parseDuration } from '../units';
import type { DiagnosticSink } from './diagnosticSink';
import type { RawTask } from './rawTask';

// A task's `schedule`: a cron pattern (checked by the parser BullMQ's job schedulers use) or an interval, in a
// time zone.

export function buildSchedule(raw: RawTask['schedule'], diags: DiagnosticSink): CrawlTask['schedule'] {
  if (!raw) return null;
  if ((raw.cron === undefined) === (raw.every === undefined)) {
    diags.atPath(['schedule'], `give either 'cron' or 'every'`);
    return null;
  }
  const timezone = raw.timezone ?? 'UTC';
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: timezone });
  } catch {
    diags.atPath(
      ['schedule', 'timezone'],
      `'${timezone}' is not a known time zone (use an IANA name such as Europe/Berlin)`,
    );
    return null;
  }
  if (raw.cron !== undefined) {
    try {
      // The parser BullMQ's job schedulers use, so a pattern accepted here is one the queue accepts.
      CronExpressionParser.parse(raw.cron, { tz: timezone });
    } catch (err) {
      const msg = (err as Error).message;
      diags.atPath(['schedule', 'cron'], `'${raw.cron}' is not a valid cron pattern: ${msg}`);
      return null;
    }
  }
  const everyMs = raw.every !== undefined ? parseDuration(raw.every) : null;
  if (everyMs !== null && everyMs < 1000) {
    diags.atPath(['schedule', 'every'], 'must be at least 1s');
    return null;
  }
  return { cron: raw.cron ?? null, everyMs, timezone };
}
