import { resolve } from 'node:path';
import type { Redis } from 'ioredis';
import { startMonitor, type Monitor, type MonitorOptions } from '../../src/monitor/server';

/** The token of an in-process monitor: given (as `--token` would be), so its actions are allowed with it. */
export const MONITOR_TOKEN = 't'.repeat(32);

/**
 * The web monitor in the test's process, on a free loopback port with the built page script (dist/, from
 * `node esbuild.mjs`), as `crawl-studio monitor --token …` serves it; `more` replaces any option.
 */
export function startTestMonitor(redis: Redis, more: Partial<MonitorOptions> = {}): Promise<Monitor> {
  return startMonitor({
    redis,
    bind: '127.0.0.1',
    port: 0,
    token: MONITOR_TOKEN,
    tokenGiven: true,
    allowHosts: [],
    hideWorkersAfterMs: 60_000,
    scriptPath: resolve('dist/media/monitor/main.js'),
    ...more,
  });
}
