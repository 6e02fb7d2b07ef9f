import { FlagValueError } from './flagError';

// Log lines for people or for machines (issue 31, item 5): `--log-format json` on `run`, `worker`, `writer` and
// `monitor` writes one JSON object a line, for a log shipper (Loki, Elasticsearch, CloudWatch); the
// human form, `<ISO time> <level> <message>`, stays the default. Pure: the caller writes the line.

export type LogFormat = 'human' | 'json';
export type LogLevel = 'info' | 'warn' | 'error';

/** The environment variable a process passes its log format to the workers it starts (and that sets the default). */
export const LOG_FORMAT_ENV = 'CRAWL_STUDIO_LOG_FORMAT';
/** The default of a worker's `--log-level`, for a container whose command line is fixed. */
export const LOG_LEVEL_ENV = 'CRAWL_STUDIO_LOG_LEVEL';

/** What a line is about, where known: `event` names it (`page-failed`, `progress`, `run-finished`…). */
export interface LogFields {
  readonly event?: string;
  readonly task?: string;
  readonly run?: string;
  readonly worker?: string;
  readonly url?: string;
  readonly reason?: string;
  /** More facts of the event (counts, a status): numbers, strings or flags only. */
  readonly [more: string]: string | number | boolean | null | undefined;
}

export type Log = (level: LogLevel, message: string, fields?: LogFields) => void;

const LEVELS: readonly LogLevel[] = ['info', 'warn', 'error'];

/**
 * `--log-level`: the least severe level written (default info). A crawl that meets thousands of 404s writes a
 * warn line for each page; an operator who reads the minute's activity line instead (or ships only problems) sets
 * warn or error, as Celery's --loglevel and Scrapy's LOG_LEVEL do.
 */
export function parseLogLevel(value: string | undefined): LogLevel {
  if (value === undefined || value === '') return 'info';
  const v = value.toLowerCase();
  if (v === 'warning') return 'warn';
  if ((LEVELS as readonly string[]).includes(v)) return v as LogLevel;
  throw new FlagValueError('log-level', value, 'expected info, warn or error');
}

/** Whether a line of `level` is written under the threshold `least`. */
export function logsAt(level: LogLevel, least: LogLevel): boolean {
  return LEVELS.indexOf(level) >= LEVELS.indexOf(least);
}

/** `--log-format`: human (default) or json; anything else is a usage error naming the flag. */
export function parseLogFormat(value: string | undefined): LogFormat {
  if (value === undefined || value === '' || value === 'human' || value === 'text') return 'human';
  if (value === 'json') return 'json';
  throw new FlagValueError('log-format', value, 'expected human or json');
}

/** One line, without its newline. JSON keys: time, level, task, run, worker, event, url, reason, message, then the rest. */
export function formatLogLine(
  format: LogFormat,
  time: number,
  level: LogLevel,
  message: string,
  fields: LogFields = {},
): string {
  const iso = new Date(time).toISOString();
  if (format === 'human') return `${iso} ${level} ${message}`;
  const { event, task, run, worker, url, reason, ...more } = fields;
  const record: Record<string, unknown> = {
    time: iso,
    level,
    task,
    run,
    worker,
    event: event ?? 'log',
    url,
    reason,
    message,
  };
  for (const [k, v] of Object.entries(more)) if (v !== undefined && !(k in record)) record[k] = v;
  return JSON.stringify(record);
}
