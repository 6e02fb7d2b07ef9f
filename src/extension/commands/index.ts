import * as vscode from 'vscode';
import { reporting } from '../errors';
import { CRAWL_COMMANDS } from './crawl';
import type { CommandDeps } from './deps';
import { ENQUEUE_COMMANDS } from './enqueue';
import { JOB_COMMANDS } from './jobs';
import { QUEUE_COMMANDS } from './queue';
import { REDIS_COMMANDS } from './redis';
import { WORKER_COMMANDS } from './workers';

// Every command of the extension outside the lazily loaded views (results, dashboard, designer), one table per
// area. Commands return their result so tests (and other extensions) can drive them without clicking; every
// failure becomes a notification that says what to do next (errors.ts).

const AREAS = [CRAWL_COMMANDS, ENQUEUE_COMMANDS, WORKER_COMMANDS, REDIS_COMMANDS, QUEUE_COMMANDS, JOB_COMMANDS];

export function registerCommands(deps: CommandDeps): void {
  for (const table of AREAS)
    for (const [id, command] of Object.entries(table))
      deps.context.subscriptions.push(
        vscode.commands.registerCommand(
          id,
          reporting((...args: never[]) => command(deps, ...args)),
        ),
      );
}
