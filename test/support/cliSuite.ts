import { spawn, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';
import { Redis } from 'ioredis';
import { serveHttp, startRedis, type HttpServer, type RedisServer } from './services';

/** What a suite of CLI processes crawls with: set once its `before` hook has run. */
export interface CliSuite {
  readonly redis: RedisServer;
  readonly web: HttpServer;
  /** A connection of the test's own, to read what the processes wrote. */
  readonly conn: Redis;
  /** The processes the tests start: any still running after the suite is killed. */
  readonly children: ChildProcess[];
}

/**
 * Registers the hooks of a suite that drives `crawl-studio` processes against a real redis-server and a local site:
 * both started before its tests; after them every child still running killed, the connection closed, both stopped.
 */
export function cliSuite(site: () => Promise<HttpServer>): CliSuite {
  const s = { children: [] as ChildProcess[] } as { -readonly [K in keyof CliSuite]: CliSuite[K] };
  before(async () => {
    s.redis = await startRedis();
    s.web = await site();
    s.conn = new Redis(s.redis.url);
  });
  after(async () => {
    for (const c of s.children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    s.conn?.disconnect();
    await s.web?.close();
    await s.redis?.stop();
  });
  return s;
}

/**
 * A site whose home page links `pages` pages, every answer 300 ms late: crawled one page at a time, its run is still
 * going when a test acts on it.
 */
export function slowLinksSite(pages: number): Promise<HttpServer> {
  return serveHttp((req, res) => {
    res.setHeader('content-type', 'text/html');
    const links = Array.from({ length: pages }, (_, i) => `<a href="/p${i}">p${i}</a>`).join('');
    setTimeout(() => res.end(req.url === '/' ? `<h1>home</h1>${links}` : `<h1>page ${req.url}</h1>`), 300);
  });
}

/** A task that crawls every page of a slowLinksSite one at a time (no robots.txt, one attempt), an item a page. */
export function oneAtATimeTask(name: string, url: string): string {
  return `name: ${name}
start: [${url}/]
request: { robots: false, retries: { attempts: 1 } }
politeness: { perHost: { concurrency: 1, delay: 0 } }
rules:
  - name: page
    match: ["**"]
    follow: [{ selector: a, to: page }]
    items:
      - type: page
        key: [title]
        fields: { title: h1 }
`;
}

/** `crawl-studio ARGS --redis <the suite's>`: its output collected, its exit code awaited; killed after the suite. */
export function spawnCli(suite: CliSuite, ...args: string[]) {
  const child = spawn(process.execPath, [resolve('dist/cli.js'), ...args, '--redis', suite.redis.url], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  suite.children.push(child);
  const out = { text: '' };
  child.stdout.on('data', (d: Buffer) => (out.text += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out.text += d.toString()));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  return { child, out, exited };
}
