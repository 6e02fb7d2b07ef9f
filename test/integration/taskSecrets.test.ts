import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import type { IncomingHttpHeaders } from 'node:http';
import { createServer, type Server, type Socket } from 'node:net';
import { networkInterfaces, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Redis } from 'ioredis';
import { serveHttp, startRedis, type HttpServer, type RedisServer } from '../support/services';

// Issue 35, item 1: a task file is untrusted input, and it names the hosts its requests go to. The exact task of
// the issue, a real HTTP server that records every request's headers, the real CLI (`validate`, `run`) with
// CRAWL_STUDIO_REDIS pointing at a real redis-server whose password is the secret: validate refuses the file at
// the header's field, and the run sends the server nothing. Then the store's two ways out: a PostgreSQL URL that
// names a host of the file's choosing (a fake PostgreSQL server that asks for the password in clear), and a
// `data.db` symlinked out of the task's folder.

const SECRET = 'S3cr3t-redis-pw';

interface Cli {
  readonly code: number | null;
  readonly out: string;
  readonly err: string;
}

function cli(args: string[], env: Record<string, string>, cwd: string): Promise<Cli> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, [resolve('dist/cli.js'), ...args], { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (b) => (out += b));
    child.stderr.on('data', (b) => (err += b));
    child.once('error', fail);
    child.once('exit', (code) => done({ code, out, err }));
  });
}

function taskDir(yaml: string): { dir: string; file: string } {
  const dir = mkdtempSync(join(tmpdir(), 'cs-secrets-'));
  const file = join(dir, 't.crawl.yaml');
  writeFileSync(file, yaml);
  return { dir, file };
}

/** An address of this machine that is not loopback (a host "the file names", reachable here); null if none. */
function externalAddress(): string | null {
  for (const list of Object.values(networkInterfaces())) for (const a of list ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  return null;
}

describe('secrets a task file may not send away (issue 35, item 1)', function () {
  this.timeout(120_000);
  let redis: RedisServer;
  let site: HttpServer;
  const seen: IncomingHttpHeaders[] = [];

  before(async () => {
    redis = await startRedis();
    const admin = new Redis(redis.url);
    await admin.config('SET', 'requirepass', SECRET);
    admin.disconnect();
    site = await serveHttp((req, res) => {
      seen.push(req.headers);
      res.writeHead(200, { 'content-type': 'text/html' }).end('<html><body><a href="/p2">next</a></body></html>');
    });
  });
  after(async () => {
    await site?.close();
    await redis?.stop();
  });

  const leakTask = (variable: string) => `name: c
start: ['${site.url}/p']
request: { robots: false, headers: { x-leak: '\${${variable}}' } }
rules: [{ name: page, match: ['**'] }]
`;

  for (const variable of ['CRAWL_STUDIO_REDIS', 'CRAWL_STUDIO_REDIS_PASSWORD', 'CRAWL_STUDIO_SENTINEL_PASSWORD']) {
    it(`validate refuses \${${variable}} in a header, naming the field, the line and the variable`, async () => {
      const { dir, file } = taskDir(leakTask(variable));
      const env = { CRAWL_STUDIO_REDIS: `redis://:${SECRET}@127.0.0.1:${redis.port}`, CRAWL_STUDIO_REDIS_PASSWORD: SECRET, CRAWL_STUDIO_SENTINEL_PASSWORD: SECRET };
      const r = await cli(['validate', file], env, dir);
      assert.equal(r.code, 1, r.out + r.err);
      assert.match(r.err, new RegExp(`t\\.crawl\\.yaml:3:\\d+: error: request\\.headers\\.x-leak: \\$\\{${variable}\\} is not expanded: it is one of Crawl Studio's own settings`));
      assert.ok(!(r.out + r.err).includes(SECRET), 'no message holds the secret');
    });
  }

  it('`run` of the exact task of the issue refuses it and the host it names never receives the Redis password', async () => {
    const { dir, file } = taskDir(leakTask('CRAWL_STUDIO_REDIS'));
    seen.length = 0;
    const r = await cli(['run', file, '--workers', '1', '--fresh'], { CRAWL_STUDIO_REDIS: `redis://:${SECRET}@127.0.0.1:${redis.port}` }, dir);
    for (const h of seen) assert.ok(!JSON.stringify(h).includes(SECRET), `the server received the secret: ${JSON.stringify(h)}`);
    assert.notEqual(r.code, 0, r.out + r.err);
    assert.match(r.err, /request\.headers\.x-leak: \$\{CRAWL_STUDIO_REDIS\} is not expanded/);
    assert.ok(!(r.out + r.err).includes(SECRET));
  });

  it('a CRAWL_STUDIO_* secret of the task\'s own still goes in a header (the documented use)', async () => {
    const { dir, file } = taskDir(leakTask('CRAWL_STUDIO_API_KEY'));
    const r = await cli(['validate', file], { CRAWL_STUDIO_API_KEY: 'k' }, dir);
    assert.equal(r.code, 0, r.out + r.err);
  });

  describe('a PostgreSQL store URL naming a host of the file\'s choosing', () => {
    let pg: Server;
    let port = 0;
    const received: Buffer[] = [];
    const host = externalAddress();

    before(async function () {
      if (host === null) this.skip(); // a machine with loopback only has no other host to name
      // A fake PostgreSQL server: whatever the client's startup message, it asks for the password in clear
      // (AuthenticationCleartextPassword) and keeps every byte the client sends.
      pg = createServer((socket: Socket) => {
        let asked = false;
        socket.on('data', (b) => {
          received.push(b);
          if (!asked) {
            asked = true;
            const r = Buffer.alloc(9);
            r.write('R', 0);
            r.writeInt32BE(8, 1);
            r.writeInt32BE(3, 5);
            socket.write(r);
          } else socket.destroy();
        });
        socket.on('error', () => undefined);
      });
      await new Promise<void>((ok) => pg.listen(0, host!, ok));
      port = (pg.address() as { port: number }).port;
    });
    after(() => new Promise<void>((ok) => (pg ? pg.close(() => ok()) : ok())));

    it('is refused at validate and at run, and the server never receives the password', async () => {
      const password = 'pg-Secret-9';
      const yaml = `name: c
start: ['${site.url}/p']
request: { robots: false }
rules: [{ name: page, match: ['**'] }]
store: { url: 'postgres://victim:\${PGPASSWORD}@${host}:${port}/db' }
`;
      const { dir, file } = taskDir(yaml);
      const env = { PGPASSWORD: password, CRAWL_STUDIO_REDIS: `redis://:${SECRET}@127.0.0.1:${redis.port}` };
      const v = await cli(['validate', file], env, dir);
      assert.equal(v.code, 1, v.out + v.err);
      assert.match(v.err, new RegExp(`t\\.crawl\\.yaml:5:\\d+: error: store\\.url: \\$\\{PGPASSWORD\\} would be sent to ${host!.replace(/\./g, '\\.')}, a host this file names`));
      const r = await cli(['run', file, '--workers', '1', '--fresh'], env, dir);
      assert.ok(!Buffer.concat(received).includes(password), 'the fake PostgreSQL server received the password');
      assert.notEqual(r.code, 0, r.out + r.err);
      assert.ok(!(r.out + r.err).includes(password));
    });

    it('with no password written, $PGPASSWORD (which the driver would send by itself) is refused too', async () => {
      const yaml = `name: c\nstart: ['${site.url}/p']\nrules: [{ name: page }]\nstore: { url: 'postgres://victim@${host}:${port}/db' }\n`;
      const { dir, file } = taskDir(yaml);
      const v = await cli(['validate', file], { PGPASSWORD: 'x' }, dir);
      assert.equal(v.code, 1, v.out + v.err);
      assert.match(v.err, /store\.url: no password is written for .*, so the PostgreSQL driver would send it \$PGPASSWORD/);
    });
  });

  it('a data.db symlinked out of the task\'s folder is refused at validate and at run, and nothing is written there', async () => {
    const outside = mkdtempSync(join(tmpdir(), 'cs-outside-'));
    const target = join(outside, 'stolen.db');
    const yaml = `name: c\nstart: ['${site.url}/p']\nrequest: { robots: false }\nrules: [{ name: page, match: ['**'] }]\nstore: { url: 'sqlite:data.db' }\n`;
    const { dir, file } = taskDir(yaml);
    symlinkSync(target, join(dir, 'data.db')); // dangling: the store would create the file outside
    const v = await cli(['validate', file], {}, dir);
    assert.equal(v.code, 1, v.out + v.err);
    assert.match(v.err, /t\.crawl\.yaml:5:\d+: error: store\.url: 'data\.db' is a symbolic link .* outside the task file's folder/);
    const r = await cli(['run', file, '--workers', '1', '--fresh'], { CRAWL_STUDIO_REDIS: `redis://:${SECRET}@127.0.0.1:${redis.port}` }, dir);
    assert.notEqual(r.code, 0, r.out + r.err);
    assert.equal(existsSync(target), false, 'the store was created outside the task folder');
    // A linked folder on the way is the same.
    mkdirSync(join(outside, 'sub'));
    const { dir: dir2, file: file2 } = taskDir(yaml.replace('sqlite:data.db', 'sqlite:sub/data.db'));
    symlinkSync(join(outside, 'sub'), join(dir2, 'sub'));
    const v2 = await cli(['validate', file2], {}, dir2);
    assert.equal(v2.code, 1, v2.out + v2.err);
    assert.match(v2.err, /store\.url: 'sub\/data\.db' is a symbolic link/);
  });
});
