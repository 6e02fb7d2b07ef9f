import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';

// Which Chromium renders pages. Nothing is downloaded at run time: the user's own browser, named or found on PATH.

/** Where a worker reads the browser's path when none is given: set by `--browser` and `crawlStudio.browserPath`. */
export const BROWSER_PATH_ENV = 'CRAWL_STUDIO_BROWSER';

const ON_PATH = ['chromium', 'chromium-browser', 'google-chrome', 'google-chrome-stable'];

class BrowserNotFoundError extends Error {
  constructor(detail: string) {
    super(
      `${detail}. Pages of this task need a browser (its 'browser' rules): install Chromium (e.g. \`apt-get install chromium\`), ` +
        `or give the path of a Chromium or Chrome with --browser PATH, the crawlStudio.browserPath setting or $${BROWSER_PATH_ENV}`,
    );
    this.name = 'BrowserNotFoundError';
  }
}

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The browser to launch: `explicit`, else $CRAWL_STUDIO_BROWSER, else the first of ON_PATH on PATH. */
export function findBrowser(explicit?: string, env: NodeJS.ProcessEnv = process.env): string {
  const named = explicit || env[BROWSER_PATH_ENV];
  if (named) {
    if (!executable(named)) throw new BrowserNotFoundError(`the browser '${named}' is not an executable file`);
    return named;
  }
  for (const dir of (env.PATH ?? '').split(delimiter).filter(Boolean)) {
    for (const name of ON_PATH) {
      const candidate = join(dir, name);
      if (executable(candidate)) return candidate;
    }
  }
  throw new BrowserNotFoundError(`no browser found (looked for ${ON_PATH.join(', ')} on PATH)`);
}
