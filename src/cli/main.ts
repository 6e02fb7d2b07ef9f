import { version } from '../../package.json';
import { formatDiagnostic, TaskFileError } from '../core/task/diagnostics';
import { RedisNotFoundError } from '../redis/server';
import { RedisTargetError } from '../core/url/redisTarget';
import { quietBullmqEviction } from '../redis/bullmqWarnings';
import {
  isPermissionError,
  isReadOnlyError,
  permissionText,
  readOnlyText,
  RedisConnectError,
  type RedisFailureCause,
} from '../redis/check';
import { TaskFileUnreadable } from '../workspace/taskFile';
import { COMMANDS, findCommand } from './commands';
import { monitorCommand } from './commands/monitor';
import { MonitorUsageError } from './monitor';
import { commandHelp, overviewHelp, parseCommand, UsageError, wantsHelp } from './spec';
import { EXIT, EXIT_CODE_DOCS } from './exitCodes';
import { FlagValueError } from '../core/flagError';

// `crawl-studio`: the headless face of the engine. Every command drives the same classes the extension does; the
// commands themselves are a table (commands/index.ts), so dispatch and help are generic here.

export const USAGE = overviewHelp(COMMANDS, EXIT_CODE_DOCS);

export async function main(argv: string[]): Promise<number> {
  quietBullmqEviction();
  const [name, ...rest] = argv;
  if (name === undefined) {
    console.log(USAGE);
    return EXIT.USAGE;
  }
  if (name === 'help' || name === '--help' || name === '-h') {
    const of = rest[0] === undefined ? undefined : findCommand(rest[0]);
    console.log(of ? commandHelp(of) : USAGE);
    return EXIT.OK;
  }
  if (name === '--version' || name === '-V') {
    console.log(version);
    return EXIT.OK;
  }
  const spec = findCommand(name);
  if (!spec) throw new UsageError(`unknown command '${name}'`, 'overview');
  if (wantsHelp(rest)) {
    console.log(commandHelp(spec));
    return EXIT.OK;
  }
  const { values, positionals } = parseCommand(spec, rest);
  return spec.run(values, positionals, rest);
}

/** What an error that ended a command prints, and the exit code it ends with. */
export function reportError(err: unknown): number {
  if (err instanceof TaskFileError) {
    for (const d of err.diagnostics) console.error(formatDiagnostic(d));
    return EXIT.USAGE;
  }
  if (err instanceof FlagValueError) {
    console.error(`crawl-studio: ${err.message}`);
    return EXIT.USAGE;
  }
  if (err instanceof TaskFileUnreadable) {
    console.error(`crawl-studio: ${err.message}`);
    return EXIT.USAGE;
  }
  if (err instanceof UsageError) {
    const help = err.help === undefined ? null : err.help === 'overview' ? USAGE : commandHelp(err.help);
    console.error(`crawl-studio: ${err.message}${help === null ? '' : `\n\n${help}`}`);
    return EXIT.USAGE;
  }
  if (err instanceof MonitorUsageError) {
    console.error(`crawl-studio: ${err.message}\n\n${commandHelp(monitorCommand)}`);
    return EXIT.USAGE;
  }
  if (err instanceof RedisNotFoundError) {
    console.error(`crawl-studio: ${err.message}`);
    return EXIT.REDIS_NOT_INSTALLED;
  }
  if (err instanceof RedisTargetError) {
    console.error(`crawl-studio: ${err.message}\n(crawl-studio run --help: the forms of a Redis target)`);
    return EXIT.USAGE;
  }
  if (err instanceof RedisConnectError) {
    console.error(`crawl-studio: ${err.message}`);
    return REDIS_EXIT[err.cause_];
  }
  // A command the ACL user may not run (`retry` by a user with reads only): the grants it needs, as the check says.
  if (isPermissionError(err)) {
    console.error(`crawl-studio: ${permissionText(err)}`);
    return REDIS_EXIT.permission;
  }
  // A command that writes (`enqueue`, `pause`, `retry`) given a replica, which answers every read.
  if (isReadOnlyError(err)) {
    console.error(`crawl-studio: ${readOnlyText()}`);
    return REDIS_EXIT.replica;
  }
  console.error(`crawl-studio: ${err instanceof Error ? err.message : String(err)}`);
  return EXIT.FAILED;
}

/** The exit code of each cause a Redis target fails with (README "Exit codes"). */
const REDIS_EXIT: Record<RedisFailureCause, number> = {
  refused: EXIT.REDIS_UNREACHABLE,
  timeout: EXIT.REDIS_UNREACHABLE,
  name: EXIT.REDIS_NAME,
  auth: EXIT.REDIS_AUTH,
  permission: EXIT.REDIS_AUTH,
  tls: EXIT.REDIS_TLS,
  topology: EXIT.REDIS_TOPOLOGY,
  // A replica is a node of the deployment, not the one a crawl can write to.
  replica: EXIT.REDIS_TOPOLOGY,
  // The target names a database this server does not have: a wrong target, as a malformed one is.
  database: EXIT.USAGE,
  other: EXIT.REDIS_UNREACHABLE,
};

if (require.main === module) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (err: unknown) => process.exit(reportError(err)),
  );
}
