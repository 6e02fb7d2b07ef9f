import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fixtureName } from './fixtureStore';

// Where a screenshot of a rendered page is written to be looked at: `<task dir>/.crawl/screenshots/<task name>/`,
// named like a fixture (host, path, a short hash of the URL). The editor opens it in VS Code's image viewer, the
// CLI (`crawl-studio screenshot`) prints its path. The copy in Redis (frontier/screenshots.ts, read by observe/screenshots.ts) is the kept one.

function screenshotFile(taskFile: string, taskName: string, url: string): string {
  return join(dirname(resolve(taskFile)), '.crawl', 'screenshots', taskName, `${fixtureName(url)}.jpg`);
}

export async function writeScreenshot(taskFile: string, taskName: string, url: string, jpeg: Buffer): Promise<string> {
  const file = screenshotFile(taskFile, taskName, url);
  await mkdir(dirname(file), { recursive: true });
  await writeFile(file, jpeg);
  return file;
}
