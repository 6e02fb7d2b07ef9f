import { redisTargetFrom } from '../../worker/args';
import { pauseTask, resumeTask, stopTask } from '../../frontier/control';
import { ControlRefused } from '../../frontier/refused';
import type { Redis } from '../../redis/connect';
import { withQueue } from '../context';
import { command, UsageError, type CommandSpec, type OptionTable } from '../spec';
import { REDIS_OPTIONS } from '../options';
import { EXIT } from '../exitCodes';

// Pause, resume and stop from a terminal (a fleet operator with no editor and no monitor open, a cron job, a deploy
// script): frontier/control.ts, the same functions and words as the Queue Explorer's buttons and the monitor's.

const STOP_OPTIONS = {
  ...REDIS_OPTIONS,
  run: {
    type: 'string',
    value: 'ID',
    help: 'stop it only if this is still its current run (a script that started it)',
  },
} as const;

function controlCommand(
  name: 'pause' | 'resume' | 'stop',
  summary: string,
  details: string,
  act: (redis: Redis, task: string, run: string | undefined) => Promise<string>,
): CommandSpec {
  const spec: CommandSpec = command<OptionTable>({
    name,
    args: '<task.crawl.yaml>',
    summary,
    details,
    options: name === 'stop' ? STOP_OPTIONS : REDIS_OPTIONS,
    run(values, positionals) {
      if (positionals.length !== 1) throw new UsageError(`${name} takes one task file`, spec);
      const run = typeof values.run === 'string' ? values.run : undefined;
      return withQueue(positionals[0]!, redisTargetFrom(values), async (_q, task, redis) => {
        try {
          console.log(await act(redis, task.name, run));
          return EXIT.OK;
        } catch (err) {
          if (!(err instanceof ControlRefused)) throw err;
          console.error(`crawl-studio ${name}: ${err.message}`);
          return EXIT.FAILED;
        }
      });
    },
  });
  return spec;
}

export const pauseCommand = controlCommand(
  'pause',
  "pause the task's run on every machine: no worker takes its pages until `resume`",
  'Pages in flight finish. A scheduled task paused between runs starts its next run only once resumed.',
  (redis, task) => pauseTask(redis, task),
);

export const resumeCommand = controlCommand(
  'resume',
  'resume a paused task: its workers take its pages again',
  'A stopped run cannot be resumed: `run` begins a new one.',
  (redis, task) => resumeTask(redis, task),
);

export const stopCommand = controlCommand(
  'stop',
  "end the task's current run for good, wherever it runs: the next `run` begins a new one",
  'Pages in flight finish; the `crawl-studio run` or editor driving it sees it stopped and ends. Ctrl-C of `run` instead keeps the run to resume.',
  (redis, task, run) => stopTask(redis, task, run),
);
