import type { CommandSpec } from '../spec';
import { demoCommand, runCommand, serveDemoCommand, writerCommand } from './run';
import { enqueueCommand, resizeCommand, screenshotCommand, statusCommand, workerCommand } from './queue';
import { errorsCommand, exportCommand, qualityCommand } from './store';
import { fixtureCommand, testCommand, validateCommand } from './fixtures';
import { failuresCommand, retryCommand } from './failures';
import { monitorCommand } from './monitor';
import { changesCommand } from './changes';
import { pauseCommand, resumeCommand, stopCommand } from './control';

/**
 * Every command of `crawl-studio`, in the order `--help` lists them. A command is one entry here (its module holds
 * its arguments, options with their help, and what it does); `--help`, dispatch and the test that walks every
 * command's help (test/unit/cliCommands.test.ts) all read this table.
 */
export const COMMANDS: readonly CommandSpec[] = [
  runCommand,
  workerCommand,
  writerCommand,
  enqueueCommand,
  statusCommand,
  pauseCommand,
  resumeCommand,
  stopCommand,
  resizeCommand,
  failuresCommand,
  retryCommand,
  exportCommand,
  changesCommand,
  validateCommand,
  testCommand,
  fixtureCommand,
  qualityCommand,
  errorsCommand,
  screenshotCommand,
  monitorCommand,
  demoCommand,
  serveDemoCommand,
];

export function findCommand(name: string): CommandSpec | undefined {
  return COMMANDS.find((c) => c.name === name);
}
