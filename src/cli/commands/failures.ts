import { redisTargetFrom, positiveInt } from '../../worker/args';
import { matchesReason, readRunFailures, retryFailureGroup, sampleFailures } from '../../observe/failures';
import { groupDigits } from '../../core/units';
import { failuresReport } from '../format';
import { withQueue } from '../context';
import { runRecorded } from '../../frontier/stats';
import { waitingNote } from '../../observe/noWorker';
import { command, UsageError } from '../spec';
import { JSON_OPTION, REDIS_OPTIONS } from '../options';
import { EXIT } from '../exitCodes';

// Why pages failed, in the terminal (issue 31, item 1), and putting them back: the dashboard's failures by cause and
// its "Retry all", through the same read-model and the same retry (observe/failures.ts).

const REASON_OPTION = {
  reason: {
    type: 'string',
    value: 'R',
    help: 'only this reason (http-404, proxy-auth, login, timeout…); `http` takes every HTTP status (http-404, http-500…, not proxy-auth, login or timeout), `http-4xx`/`http-5xx` a class; nothing else matches by prefix',
  },
} as const;

export const failuresCommand = command({
  name: 'failures',
  args: '<task.crawl.yaml>',
  summary:
    'the failed and skipped pages of a run, by reason: URL, rule, HTTP status, attempts, last error, worker, time',
  options: {
    ...REDIS_OPTIONS,
    run: { type: 'string', value: 'ID', help: 'a run other than the current one' },
    ...REASON_OPTION,
    limit: { type: 'string', value: 'N', help: 'pages listed per reason (default 20)' },
    ...JSON_OPTION,
  },
  run(values, positionals) {
    if (positionals.length !== 1) throw new UsageError('failures takes one task file', failuresCommand);
    const limit = positiveInt(values.limit, 'limit', 20);
    return withQueue(positionals[0]!, redisTargetFrom(values), async (q, task, redis) => {
      // A mistyped --run read as a run with no failures ("run bogus: 0 pages failed").
      if (values.run !== undefined && !(await runRecorded(redis, task.name, values.run))) {
        const current = (await q.currentRun())?.run;
        console.error(
          `crawl-studio: no run '${values.run}' of ${task.name} on this Redis${current ? ` (its current run is ${current})` : ''}`,
        );
        return EXIT.USAGE;
      }
      const report = await readRunFailures(q.parts, { run: values.run, reason: values.reason, limit });
      if (values.json) console.log(JSON.stringify(report, null, 2));
      else for (const line of failuresReport(report)) console.log(line);
      return EXIT.OK;
    });
  },
});

export const retryCommand = command({
  name: 'retry',
  args: '<task.crawl.yaml>',
  summary: "put the current run's failed pages back in its queue (all, or one reason), as the dashboard's Retry all",
  details:
    'The run reopens if it had finished; its workers (or the next `run` of the task, which resumes it) fetch them.',
  options: { ...REDIS_OPTIONS, ...REASON_OPTION },
  run(values, positionals) {
    if (positionals.length !== 1) throw new UsageError('retry takes one task file', retryCommand);
    return withQueue(positionals[0]!, redisTargetFrom(values), async (q, task, redis) => {
      // As `status` and `failures` say it: "no failed pages" read as a run without failures.
      if (!(await q.currentRun())) {
        console.log(`${task.name}: never run on this Redis`);
        return EXIT.OK;
      }
      const groups = (await sampleFailures(q.parts, { max: 100_000, urlsPerGroup: 0 })).filter((g) =>
        matchesReason(g.group, values.reason),
      );
      const retried: string[] = [];
      let total = 0;
      for (const g of groups) {
        const n = await retryFailureGroup(q.parts, g.group);
        if (n > 0) retried.push(`${g.group}: ${groupDigits(n)}`);
        total += n;
      }
      if (total === 0) {
        console.log(
          `no failed pages${values.reason ? ` with reason '${values.reason}'` : ''} to retry in ${task.name}`,
        );
        return EXIT.OK;
      }
      console.log(`put back ${groupDigits(total)} failed page${total === 1 ? '' : 's'} (${retried.join(', ')})`);
      const note = await waitingNote(redis, task.name, `\`crawl-studio run ${positionals[0]}\` resumes the run`);
      console.log(note ? note.trimStart() : "the task's workers fetch them");
      return EXIT.OK;
    });
  },
});
