import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import type { IncomingHttpHeaders } from 'node:http';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
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
    const child = spawn(process.execPath, [resolve('dist/cli.js'), ...args], {
      cwd,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
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
      const env = {
        CRAWL_STUDIO_REDIS: `redis://:${SECRET}@127.0.0.1:${redis.port}`,
        CRAWL_STUDIO_REDIS_PASSWORD: SECRET,
        CRAWL_STUDIO_SENTINEL_PASSWORD: SECRET,
      };
      const r = await cli(['validate', file], env, dir);
      assert.equal(r.code, 1, r.out + r.err);
      assert.match(
        r.err,
        new RegExp(
          `t\\.crawl\\.yaml:3:\\d+: error: request\\.headers\\.x-leak: \\$\\{${variable}\\} is not expanded: it is one of Crawl Studio's own settings`,
        ),
      );
      assert.ok(!(r.out + r.err).includes(SECRET), 'no message holds the secret');
    });
  }

  it('`run` of the exact task of the issue refuses it and the host it names never receives the Redis password', async () => {
    const { dir, file } = taskDir(leakTask('CRAWL_STUDIO_REDIS'));
    seen.length = 0;
    const r = await cli(
      ['run', file, '--workers', '1', '--fresh'],
      { CRAWL_STUDIO_REDIS: `redis://:${SECRET}@127.0.0.1:${redis.port}` },
      dir,
    );
    for (const h of seen)
      assert.ok(!JSON.stringify(h).includes(SECRET), `the server received the secret: ${JSON.stringify(h)}`);
    assert.notEqual(r.code, 0, r.out + r.err);
    assert.match(r.err, /request\.headers\.x-leak: \$\{CRAWL_STUDIO_REDIS\} is not expanded/);
    assert.ok(!(r.out + r.err).includes(SECRET));
  });

  it("a CRAWL_STUDIO_* secret of the task's own still goes in a header (the documented use)", async () => {
    const { dir, file } = taskDir(leakTask('CRAWL_STUDIO_API_KEY'));
    const r = await cli(['validate', file], { CRAWL_STUDIO_API_KEY: 'k' }, dir);
    assert.equal(r.code, 0, r.out + r.err);
  });

  describe("a PostgreSQL store URL naming a host of the file's choosing", () => {
    let pg: Server;
    let port = 0;
    const received: Buffer[] = [];
    // A host that is not loopback by name (the check is on the name the file writes), which Linux still connects
    // to this machine: the test needs no network interface but loopback, and sends nothing off the machine.
    const host = '0.0.0.0';

    before(async function () {
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
      await new Promise<void>((ok) => pg.listen(0, '127.0.0.1', ok));
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
      assert.match(
        v.err,
        new RegExp(
          `t\\.crawl\\.yaml:5:\\d+: error: store\\.url: \\$\\{PGPASSWORD\\} would be sent to ${host.replace(/\./g, '\\.')}, a host this file names`,
        ),
      );
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
      assert.match(
        v.err,
        /store\.url: no password is written for .*, so the PostgreSQL driver would send it \$PGPASSWORD/,
      );
    });
  });

  it("a data.db symlinked out of the task's folder is refused at validate and at run, and nothing is written there", async () => {
    const outside = mkdtempSync(join(tmpdir(), 'cs-outside-'));
    const target = join(outside, 'stolen.db');
    const yaml = `name: c\nstart: ['${site.url}/p']\nrequest: { robots: false }\nrules: [{ name: page, match: ['**'] }]\nstore: { url: 'sqlite:data.db' }\n`;
    const { dir, file } = taskDir(yaml);
    symlinkSync(target, join(dir, 'data.db')); // dangling: the store would create the file outside
    const v = await cli(['validate', file], {}, dir);
    assert.equal(v.code, 1, v.out + v.err);
    assert.match(
      v.err,
      /t\.crawl\.yaml:5:\d+: error: store\.url: 'data\.db' is a symbolic link .* outside the task file's folder/,
    );
    const r = await cli(
      ['run', file, '--workers', '1', '--fresh'],
      { CRAWL_STUDIO_REDIS: `redis://:${SECRET}@127.0.0.1:${redis.port}` },
      dir,
    );
    assert.notEqual(r.code, 0, r.out + r.err);
    assert.equal(existsSync(target), false, 'the store was created outside the task folder');
    // A linked folder on the way is the same.
    mkdirSync(join(outside, 'sub'));
    const { dir: dir2, file: file2 } = taskDir(yaml.replace('sqlite:data.db', 'sqlite:sub/data.db'));
    symlinkSync(join(outside, 'sub'), join(dir2, 'sub'));
    const v2 = await cli(['validate', file2], {}, dir2);
    assert.equal(v2.code, 1, v2.out + v2.err);
    assert.match(v2.err, /store\.url: 'sub\/data\.db' is a symbolic link/);
    // And the default store, .crawl/<task>.sqlite, when a shared folder ships `.crawl` as a link.
    const { dir: dir3, file: file3 } = taskDir(yaml.replace("store: { url: 'sqlite:data.db' }\n", ''));
    mkdirSync(join(outside, 'crawl'));
    symlinkSync(join(outside, 'crawl'), join(dir3, '.crawl'));
    const r3 = await cli(
      ['run', file3, '--workers', '1', '--fresh'],
      { CRAWL_STUDIO_REDIS: `redis://:${SECRET}@127.0.0.1:${redis.port}` },
      dir3,
    );
    assert.notEqual(r3.code, 0, r3.out + r3.err);
    assert.match(r3.err, /the default store: '\.crawl\/c\.sqlite' is a symbolic link/);
    assert.equal(existsSync(join(outside, 'crawl', 'c.sqlite')), false);
  });
});

// Issue 35, item 5: `start: [http://alice:Hunter2@host/p/1]` passed validate, sent no Authorization header, and
// the URL with its password landed in the pages table, items and the Redis AOF. Refused at validate (so never
// seeded) and at enqueue, with a message that points to the settings for credentials and never shows the password.
describe('credentials in a start or enqueued URL (issue 35, item 5)', function () {
  this.timeout(120_000);
  let redis: RedisServer;
  let site: HttpServer;
  const PASSWORD = 'Hunter2-pw';

  before(async () => {
    redis = await startRedis();
    site = await serveHttp((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<p>hi</p>'));
  });
  after(async () => {
    await site?.close();
    await redis?.stop();
  });

  it('validate refuses a start URL with user:password@, at its field, pointing to login/headers, without the password', async () => {
    const withCreds = site.url.replace('http://', `http://alice:${PASSWORD}@`);
    const { dir, file } = taskDir(`name: c\nstart: [${withCreds}/p/1]\nrules: [{ name: page }]\n`);
    const v = await cli(['validate', file], {}, dir);
    assert.equal(v.code, 1, v.out + v.err);
    assert.match(
      v.err,
      /t\.crawl\.yaml:2:\d+: error: start\[0\]: 'http:\/\/alice:\*\*\*@127\.0\.0\.1:\d+\/p\/1' has a user name or password in it: .*log in with 'login:', or send the credentials in a header/,
    );
    assert.ok(!(v.out + v.err).includes(PASSWORD));
    const r = await cli(['run', file, '--workers', '1', '--redis', redis.url], {}, dir);
    assert.notEqual(r.code, 0, r.out + r.err);
    assert.ok(!(r.out + r.err).includes(PASSWORD));
    const admin = new Redis(redis.url);
    try {
      assert.deepEqual(await admin.keys('cs:{c}*'), [], 'nothing of the task reached Redis');
    } finally {
      admin.disconnect();
    }
  });

  it('enqueue refuses such a URL (from arguments and from a file) without printing its password, and queues nothing', async () => {
    const { dir, file } = taskDir(`name: e\nstart: [${site.url}/]\nrules: [{ name: page }]\n`);
    const first = await cli(['run', file, '--workers', '1', '--redis', redis.url], {}, dir);
    assert.equal(first.code, 0, first.out + first.err);
    const withCreds = `${site.url.replace('http://', `http://alice:${PASSWORD}@`)}/p/1`;
    const one = await cli(['enqueue', file, withCreds, '--redis', redis.url], {}, dir);
    assert.equal(one.code, 1, one.out + one.err);
    assert.match(
      one.out,
      /^invalid +http:\/\/alice:\*\*\*@127\.0\.0\.1:\d+\/p\/1 \(credentials: a URL is stored and shown with its page/m,
    );
    const list = join(dir, 'urls.txt');
    writeFileSync(list, `${withCreds}\n`);
    const bulk = await cli(['enqueue', file, '--file', list, '--redis', redis.url], {}, dir);
    assert.equal(bulk.code, 1, bulk.out + bulk.err);
    assert.match(bulk.err, /urls\.txt:1: credentials \(.*send the credentials in a header.*\): http:\/\/alice:\*\*\*@/);
    for (const r of [one, bulk]) assert.ok(!(r.out + r.err).includes(PASSWORD), r.out + r.err);
    const admin = new Redis(redis.url);
    try {
      for (const key of await admin.keys('*')) {
        const type = await admin.type(key);
        const dump =
          type === 'string'
            ? await admin.get(key)
            : type === 'hash'
              ? JSON.stringify(await admin.hgetall(key))
              : type === 'list'
                ? JSON.stringify(await admin.lrange(key, 0, -1))
                : type === 'set'
                  ? JSON.stringify(await admin.smembers(key))
                  : type === 'zset'
                    ? JSON.stringify(await admin.zrange(key, 0, -1))
                    : '';
        assert.ok(!String(dump).includes(PASSWORD), `${key} holds the password`);
      }
    } finally {
      admin.disconnect();
    }
  });
});
