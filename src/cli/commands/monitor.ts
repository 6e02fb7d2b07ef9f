import { cmdMonitor, MONITOR_USAGE } from '../monitor';
import { command } from '../spec';
import { LOG_FORMAT_OPTION, REDIS_OPTIONS } from '../options';
import { redisTargetFrom } from '../../worker/args';
import { checkRedis } from '../../redis/check';

// `monitor` in the table of commands: its options for --help and the checks; src/cli/monitor.ts runs it.

export const monitorCommand = command({
  name: 'monitor',
  args: '',
  summary: 'a web monitor of every task, run and worker on one Redis, with Prometheus /metrics',
  details: MONITOR_USAGE.split('\n').slice(2).join('\n'),
  options: {
    ...REDIS_OPTIONS,
    port: { type: 'string', value: 'N', help: 'the port (default 5555; 0: any free one)' },
    bind: {
      type: 'string',
      value: 'ADDRESS',
      help: 'the address to listen on (default 127.0.0.1; beyond loopback needs a given token)',
    },
    token: {
      type: 'string',
      value: 'T',
      help: "the actions' token (better: $CRAWL_STUDIO_MONITOR_TOKEN; else one is made and printed once)",
    },
    'allow-host': {
      type: 'string',
      multiple: true,
      value: 'NAME',
      help: 'a Host name the monitor also answers to (repeatable)',
    },
    'hide-workers-after': {
      type: 'string',
      value: 'SECONDS',
      help: 'workers silent that long leave the default view (default 600)',
    },
    ...LOG_FORMAT_OPTION,
  },
  // The monitor parses its own arguments (with its defaults); the table has checked them. Its Redis is checked as
  // every command's is, so a wrong one exits with the same words and exit codes (cli/exitCodes.ts).
  async run(values, _positionals, argv) {
    const target = redisTargetFrom(values);
    if (target) await checkRedis(target);
    return cmdMonitor([...argv]);
  },
});
