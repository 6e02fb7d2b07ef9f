import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { serveHttp, type HttpServer } from '../support/services';
import { until } from '../support/until';

// The project's private redis-server, as `crawl-studio run` starts it when no Redis is given (issue 35 items 3 and
// 4, issue 30 item 6). The real CLI in fresh folders, a real site whose access log counts every request:
// - two `run`s of one task at once: one drives it, the other refuses as on a shared Redis; each page fetched once;
// - the private server killed mid-crawl: said at once, started again with its data, the crawl finishes whole;
// - `run` killed with SIGKILL: its server does not outlive it, and one left over anyway is stopped by the next start.

const CLI = resolve('dist/cli.js');
const PAGES = 30;

interface Cli {
  readonly child: ChildProcess;
  output(): string;
  readonly exited: Promise<number | null>;
}

function startCli(args: string[], cwd: string): Cli {
  const env = { ...process.env };
  // The private server is what is tested: no Redis from the environment.
  delete env.CRAWL_STUDIO_REDIS;
  const child = spawn(process.execPath, [CLI, ...args], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (b: Buffer) => (out += b.toString()));
  child.stderr.on('data', (b: Buffer) => (out += b.toString()));
  const exited = new Promise<number | null>((r) =>
    child.once('exit', (code, signal) => r(code ?? (signal ? null : -1))),
  );
  return { child, output: () => out, exited };
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  // A process that exited and was not reaped yet (a test's orphans may be reparented to a pid 1 that does not reap).
  try {
    return !/ Z /.test(readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\)/s, ')'));
  } catch {
    return false;
  }
}

interface ServerFile {
  pid: number;
  port: number;
  owner?: number;
  watchdog?: number;
}

/** The processes registered as users of a folder's server (a run, the workers it started) that still live. */
function liveUsers(folder: string): number[] {
  const dir = join(folder, '.crawl', 'redis', 'users');
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .map(Number)
    .filter((pid) => Number.isInteger(pid) && alive(pid));
}

function serverFile(folder: string): ServerFile | null {
  const file = join(folder, '.crawl', 'redis', 'server.json');
  if (!existsSync(file)) return null;
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as ServerFile;
  } catch {
    return null;
  }
}

describe('The private redis-server of a project folder (issue 35 items 3-4, issue 30 item 6)', function () {
  this.timeout(600_000);
  let site: HttpServer;
  let requests: string[] = [];
  const clis: ChildProcess[] = [];
  const servers: number[] = [];

  before(async () => {
    site = await serveHttp((req, res) => {
      requests.push(req.url ?? '');
      res.setHeader('content-type', 'text/html');
      // Slow enough that a run lasts a few seconds: a second run started at once meets the first one running.
      setTimeout(() => {
        if (req.url === '/')
          res.end(
            `<html><body>${Array.from({ length: PAGES }, (_, i) => `<a href="/p/${i}">${i}</a>`).join('')}</body></html>`,
          );
        else res.end('<html><body><h1>x</h1></body></html>');
      }, 60);
    });
  });
  after(async () => {
    await site?.close();
    // Nothing a test started may outlive it, whatever it asserted: CLIs still running, and private servers of this
    // test's folders (checked by their command line, so a pid reused by another process is never killed).
    for (const child of clis) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    for (const pid of servers) {
      let cmd: string;
      try {
        cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      } catch {
        continue;
      }
      if (cmd.includes('redis-server') && cmd.includes('cs-private-')) process.kill(pid, 'SIGKILL');
    }
  });

  function folder(name: string): string {
    const dir = mkdtempSync(join(tmpdir(), `cs-private-${name}-`));
    writeFileSync(
      join(dir, 't.crawl.yaml'),
      `name: ${name}
start: ['${site.url}/']
request: { robots: false }
politeness: { perHost: { concurrency: 1, delay: 0ms } }
rules:
  - name: page
    match: ['**']
    follow:
      - selector: a
`,
    );
    return dir;
  }

  function fetchedOnce(): void {
    const counts = new Map<string, number>();
    for (const u of requests) counts.set(u, (counts.get(u) ?? 0) + 1);
    assert.equal(counts.size, PAGES + 1, `pages fetched: ${[...counts.keys()].length} of ${PAGES + 1}`);
    const twice = [...counts].filter(([, n]) => n > 1);
    assert.deepEqual(twice, [], 'each page fetched once');
  }

  async function serverGone(dir: string): Promise<void> {
    const s = serverFile(dir);
    if (s) await until(`redis-server ${s.pid} of ${dir} to stop`, () => !alive(s.pid), 20_000);
  }

  it('two runs of one task at once in a fresh folder, ten times: one drives it, the other refuses clearly; each page fetched once', async () => {
    for (let round = 1; round <= 10; round++) {
      requests = [];
      const dir = folder('twice');
      const runs = [
        startCli(['run', 't.crawl.yaml', '--workers', '1'], dir),
        startCli(['run', 't.crawl.yaml', '--workers', '1'], dir),
      ];
      const codes = await Promise.all(runs.map((r) => r.exited));
      const outs = runs.map((r) => r.output());
      const ok = codes.filter((c) => c === 0).length;
      assert.equal(
        ok,
        1,
        `round ${round}: exactly one run drives the task (exit codes ${codes.join(', ')}):\n${outs.join('\n----\n').slice(-4000)}`,
      );
      const refused = outs[codes.findIndex((c) => c !== 0)]!;
      assert.match(
        refused,
        /task 'twice' is already running: crawl-studio run \(pid \d+ on .*\) drives its run/,
        `round ${round}:\n${refused}`,
      );
      fetchedOnce();
      await serverGone(dir);
    }
  });

  it('the private redis-server killed mid-crawl: said at once, started again with its data, the crawl finishes with every page; SIGTERM then ends the run', async () => {
    requests = [];
    const dir = folder('killed');
    const run = startCli(['run', 't.crawl.yaml', '--workers', '1'], dir);
    clis.push(run.child);
    await until('the first pages', () => requests.length >= 3);
    const first = serverFile(dir)!;
    process.kill(first.pid, 'SIGKILL');
    await until(
      'the run to say its Redis stopped',
      () => /the private redis-server \(pid \d+, [^)]+\) stopped unexpectedly/.test(run.output()),
      15_000,
    );
    await until(
      'the run to say its Redis is back',
      () => /the private redis-server is back/.test(run.output()),
      30_000,
    );
    assert.equal(await run.exited, 0, run.output().slice(-3000));
    assert.match(run.output(), new RegExp(`pages fetched +${PAGES + 1}\\b`), run.output().slice(-3000));
    assert.equal(new Set(requests).size, PAGES + 1, 'every page was fetched');
    await serverGone(dir);

    // Killed again, and SIGTERM while it comes back: the run stops and says what it waits for, never a store.
    requests = [];
    const again = startCli(['run', 't.crawl.yaml', '--workers', '1', '--fresh'], dir);
    clis.push(again.child);
    await until('the first pages of the second run', () => requests.length >= 3);
    process.kill(serverFile(dir)!.pid, 'SIGKILL');
    await until('the run to say its Redis stopped', () => /stopped unexpectedly/.test(again.output()), 15_000);
    again.child.kill('SIGTERM');
    const code = await again.exited;
    assert.equal(code, 130, again.output().slice(-3000));
    assert.doesNotMatch(again.output(), /a store that does not answer/);
    await serverGone(dir);
  });

  it('`run` killed with SIGKILL: its redis-server stops with it, and the next run starts cleanly and finishes the crawl', async () => {
    requests = [];
    const dir = folder('orphan');
    const run = startCli(['run', 't.crawl.yaml', '--workers', '1'], dir);
    clis.push(run.child);
    await until('the first pages', () => requests.length >= 3);
    const s = serverFile(dir)!;
    servers.push(s.pid);
    run.child.kill('SIGKILL');
    await run.exited;
    await until(`redis-server ${s.pid} of the killed run to stop`, () => !alive(s.pid), 20_000);

    const next = startCli(['run', 't.crawl.yaml', '--workers', '1'], dir);
    clis.push(next.child);
    assert.equal(await next.exited, 0, next.output().slice(-3000));
    assert.match(next.output(), /Resumed run/, next.output().slice(-3000));
    assert.equal(new Set(requests).size, PAGES + 1, 'every page was fetched');
    await serverGone(dir);
  });

  it('a redis-server left by a run and its watchdog both killed is stopped by the next start, which runs cleanly', async () => {
    requests = [];
    const dir = folder('leftover');
    const run = startCli(['run', 't.crawl.yaml', '--workers', '1'], dir);
    clis.push(run.child);
    await until('the first pages', () => requests.length >= 3);
    const s = serverFile(dir)!;
    servers.push(s.pid);
    assert.ok(s.watchdog, 'the server has a watchdog');
    process.kill(s.watchdog, 'SIGKILL');
    run.child.kill('SIGKILL');
    await run.exited;
    // Its worker is a user of the server too, and finishes its pages before it exits (its parent's pipe closed): a
    // start meanwhile reuses the server, rightly. Once every user died, the server is a leftover.
    await until("the killed run's worker to exit", () => liveUsers(dir).length === 0, 30_000);
    assert.ok(alive(s.pid), 'with its watchdog killed too, the server is left running');

    const next = startCli(['run', 't.crawl.yaml', '--workers', '1'], dir);
    clis.push(next.child);
    assert.equal(await next.exited, 0, next.output().slice(-3000));
    assert.match(
      next.output(),
      new RegExp(`stopped the private redis-server \\(pid ${s.pid}\\) left running by a process that died`),
      next.output(),
    );
    assert.ok(!alive(s.pid), 'the leftover server is gone');
    assert.equal(new Set(requests).size, PAGES + 1, 'every page was fetched');
    await serverGone(dir);
  });
});
