import { createWriteStream, type WriteStream } from 'node:fs';
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { dataDirFor } from '../../run/redisChoice';
import { loadTaskFile } from '../../workspace/taskFile';
import { positiveInt, redisTargetFrom } from '../../worker/args';
import { readTaskStatus } from '../../observe/taskStatus';
import { storeUrlFor } from '../../run/storeAttachment';
import { exportItems, openStore, type ExportFormat } from '../../store';
import { redactUrl } from '../../redis/connect';
import { groupDigits } from '../../core/units';
import { qualityReports, qualityTable } from '../quality';
import { withQueue, withStore } from '../context';
import { command, UsageError } from '../spec';
import { REDIS_OPTIONS, STORE_OPTION } from '../options';
import { EXIT } from '../exitCodes';
import { exportChangesOf } from './changes';

// Commands on a task's store: export, quality, errors.

/** The current run's failed pages, for the hint of `errors`; 0 when Redis has no run of the task (or cannot say). */
async function failedPages(taskFile: string, redis: string | undefined): Promise<number> {
  // Not worth starting a private redis-server for: only one the task has used (its data next to the task file).
  if (!redis && !existsSync(join(dataDirFor(resolve(taskFile)), 'redis'))) return 0;
  try {
    return await withQueue(
      taskFile,
      redis,
      async (_q, task, r) => (await readTaskStatus(r, task.name)).stats?.failed ?? 0,
    );
  } catch {
    return 0;
  }
}

export const exportCommand = command({
  name: 'export',
  args: '<task.crawl.yaml>',
  summary: 'write the stored items as JSONL (default), CSV or JSON',
  options: {
    format: {
      type: 'string',
      short: 'f',
      value: 'jsonl|csv|json',
      help: 'the format (default jsonl; a CSV holds one item type)',
    },
    type: { type: 'string', value: 'T', help: 'only items of type T' },
    out: { type: 'string', short: 'o', value: 'FILE', help: 'write to FILE (default: stdout)' },
    ...STORE_OPTION,
    meta: { type: 'boolean', help: 'add _key, _url and _fetched_at to each record' },
    'csv-raw': {
      type: 'boolean',
      help: 'keep CSV cells that start like a formula (= + - @) as they are (default: neutralised)',
    },
    changes: {
      type: 'boolean',
      help: 'write the item changes `changes` lists (added, changed, removed) instead of the items',
    },
    since: {
      type: 'string',
      value: 'RUN|DATE',
      help: 'with --changes: every run after that run id, or since that date',
    },
  },
  async run(values, positionals) {
    if (positionals.length !== 1) throw new UsageError('export takes one task file', exportCommand);
    const format = (values.format ?? 'jsonl') as ExportFormat;
    if (!['jsonl', 'csv', 'json'].includes(format))
      throw new UsageError(`--format must be jsonl, csv or json, not '${format}'`, exportCommand);
    const task = await loadTaskFile(positionals[0]!);
    const store = await openStore(values.store ?? storeUrlFor(task), { task: task.name, cwd: dirname(task.file) });
    try {
      // `export | head -1`: a reader that closed the pipe has all it wanted, so the export ends quietly, exit 0.
      if (!values.out)
        process.stdout.on('error', (err: NodeJS.ErrnoException) => {
          if (err.code === 'EPIPE') process.exit(EXIT.OK);
          throw err;
        });
      const out = values.out ? createWriteStream(values.out) : process.stdout;
      let res;
      try {
        res = values.changes
          ? await exportChangesOf(store, task.name, {
              format,
              since: values.since,
              type: values.type,
              out,
              csvRaw: values['csv-raw'] ?? false,
            })
          : await exportItems(store, {
              format,
              type: values.type,
              out,
              meta: values.meta ?? false,
              csvRaw: values['csv-raw'] ?? false,
            });
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'EPIPE' && !values.out) return EXIT.OK;
        throw err;
      }
      if (values.out) {
        await new Promise<void>((resolve, reject) =>
          (out as WriteStream).end((err?: Error | null) => (err ? reject(err) : resolve())),
        );
        console.error(
          `exported ${groupDigits(res.items)} ${values.changes ? 'changes' : 'items'} (${res.types.join(', ')}) from ${redactUrl(store.location)} to ${values.out}`,
        );
      } else if (res.items === 0) {
        // To a terminal or a pipe an empty export was silence, which read as a hang or a wrong store.
        console.error(
          values.changes
            ? `no item changes to export from ${redactUrl(store.location)}`
            : `no items to export: ${redactUrl(store.location)} holds none yet (\`crawl-studio run ${positionals[0]}\` stores them)`,
        );
      }
      return EXIT.OK;
    } finally {
      await store.close();
    }
  },
});

export const qualityCommand = command({
  name: 'quality',
  args: '<task.crawl.yaml>',
  summary: 'per item type and field: empty and distinct values, and the selector',
  options: { ...STORE_OPTION },
  async run(values, positionals) {
    if (positionals.length !== 1) throw new UsageError('quality takes one task file', qualityCommand);
    const task = await loadTaskFile(positionals[0]!);
    return withStore(task, values.store, async (store) => {
      const reports = await qualityReports(store);
      for (const line of qualityTable(task, reports)) console.log(line);
      const errors = await store.countErrors();
      if (errors) console.log(`${groupDigits(errors)} errors recorded: crawl-studio errors ${positionals[0]}`);
      return EXIT.OK;
    });
  },
});

export const errorsCommand = command({
  name: 'errors',
  args: '<task.crawl.yaml>',
  summary: 'errors recorded in the store (extraction, invalid items); failed pages are in `failures`',
  options: {
    ...STORE_OPTION,
    ...REDIS_OPTIONS,
    limit: { type: 'string', value: 'N', help: 'print at most N (default 50)' },
  },
  async run(values, positionals) {
    if (positionals.length !== 1) throw new UsageError('errors takes one task file', errorsCommand);
    const limit = positiveInt(values.limit, 'limit', 50);
    const task = await loadTaskFile(positionals[0]!);
    return withStore(task, values.store, async (store) => {
      const total = await store.countErrors();
      console.log(
        `${groupDigits(total)} error${total === 1 ? '' : 's'} recorded in ${redactUrl(store.location)}${total > limit ? ` (the first ${groupDigits(limit)}; --limit N for more)` : ''}`,
      );
      if (total === 0) {
        // "0 errors" after a run whose pages failed read as "nothing went wrong": failed pages are not store errors.
        const failed = await failedPages(positionals[0]!, redisTargetFrom(values));
        if (failed)
          console.log(
            `(extraction errors only: ${groupDigits(failed)} page${failed === 1 ? '' : 's'} failed in the current run; see crawl-studio failures ${positionals[0]})`,
          );
      }
      for (const e of await store.readErrors({ offset: 0, limit })) {
        const what = [e.rule && `rule ${e.rule}`, e.type && `${e.type}${e.key ? ` ${e.key}` : ''}`]
          .filter(Boolean)
          .join(', ');
        console.log(`${e.kind.padEnd(8)} ${e.url ?? '-'}${what ? ` (${what})` : ''}: ${e.message}`);
      }
      return EXIT.OK;
    });
  },
});
