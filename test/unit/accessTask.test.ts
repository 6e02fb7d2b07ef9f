import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { formatDiagnostic } from '../../src/core/task/diagnostics';
// The front ends' parse: the task's ${VAR}s read from this process's environment (core's parseTask takes it as an argument).
import { parseTaskText as parseTask } from '../../src/workspace/taskFile';
import { tempDir } from '../support/tempDir';
import {
  credentialVariables,
  expandJson,
  expandProxyUrl,
  expandValue,
  hasLiteralCredentials,
} from '../../src/core/task/secrets';

// `session`, `login` and `proxy` in task files: what the task gets (templates, never values) and mistakes
// reported at their file, line and field.

const base = `name: shop
start: [http://shop.test/]
rules: [{ name: page }]
`;

describe('task files: sessions, logins and proxies', () => {
  it('keeps login values and proxy URLs as templates, with the defaults', () => {
    process.env.CRAWL_STUDIO_T_USER = 'ann';
    process.env.CRAWL_STUDIO_T_PW = 's3cret';
    process.env.CRAWL_STUDIO_PROXY_T_USER = 'pu';
    process.env.CRAWL_STUDIO_PROXY_T_PW = 'pp';
    const { task, diagnostics } = parseTask(
      base +
        `login:
  url: http://shop.test/login
  form:
    fields: { user: '\${CRAWL_STUDIO_T_USER}', password: '\${CRAWL_STUDIO_T_PW}' }
  check: { selector: .logout }
proxy:
  urls: ['http://\${CRAWL_STUDIO_PROXY_T_USER}:\${CRAWL_STUDIO_PROXY_T_PW}@127.0.0.1:3128']
`,
      'shop.crawl.yaml',
    );
    assert.deepEqual(
      diagnostics.map((d) => formatDiagnostic(d)),
      [],
    );
    assert.deepEqual(task!.session, {
      pool: 1,
      maxPages: null,
      retireOnStatus: [401, 403, 429],
      retireOnSelector: null,
    });
    assert.deepEqual(task!.login!.fields, { user: '${CRAWL_STUDIO_T_USER}', password: '${CRAWL_STUDIO_T_PW}' });
    assert.equal(task!.login!.kind, 'form');
    assert.equal(task!.login!.checkSelector, '.logout');
    assert.deepEqual(task!.proxy, {
      urls: ['http://${CRAWL_STUDIO_PROXY_T_USER}:${CRAWL_STUDIO_PROXY_T_PW}@127.0.0.1:3128'],
      rotate: 'per-session',
    });
    assert.ok(!JSON.stringify(task).includes('s3cret'), 'a parsed task holds no secret');
    assert.deepEqual(
      credentialVariables(task!),
      ['CRAWL_STUDIO_PROXY_T_PW', 'CRAWL_STUDIO_PROXY_T_USER', 'CRAWL_STUDIO_T_PW', 'CRAWL_STUDIO_T_USER'],
      'what the editor looks up in Secret Storage',
    );
  });

  it('reads a session pool with its retire rules', () => {
    const { task } = parseTask(
      base + `session: { pool: 3, maxPages: 20, retireOn: { status: [403], selector: '#captcha' } }\n`,
      's.crawl.yaml',
    );
    assert.deepEqual(task!.session, { pool: 3, maxPages: 20, retireOnStatus: [403], retireOnSelector: '#captcha' });
    assert.equal(task!.login, null);
  });

  it('reports mistakes at their line and field', () => {
    const { task, diagnostics } = parseTask(
      base +
        `login:
  url: http://shop.test/login
  post: { json: {} }
  form: { fields: { user: '\${HOME}' } }
proxy:
  urls: ['http://bob:hunter2@proxy.test:3128']
session: { retireOn: { selector: 'a[' } }
`,
      'bad.crawl.yaml',
    );
    assert.equal(task, null);
    const lines = diagnostics.map((d) => formatDiagnostic(d));
    const has = (re: RegExp) =>
      assert.ok(
        lines.some((l) => re.test(l)),
        `${re} in\n${lines.join('\n')}`,
      );
    has(/bad\.crawl\.yaml:5:.*login: give either 'form'/);
    has(/bad\.crawl\.yaml:7:.*login\.form\.fields\.user.*\$\{HOME\} is not expanded/);
    has(/bad\.crawl\.yaml:9:.*proxy\.urls\[0\].*password is written in the file/);
    has(/bad\.crawl\.yaml:10:.*session\.retireOn\.selector.*not a valid CSS selector/);
    assert.ok(!lines.some((l) => l.includes('hunter2')), 'no message quotes the password');
  });

  it('warns about unset variables in request headers (the task ones and each rule ones) as for login and proxy, at their line', async () => {
    delete process.env.CRAWL_STUDIO_T_UNSET_KEY;
    process.env.CRAWL_STUDIO_T_SET_KEY = 'k';
    const yaml = `name: shop
start: [http://shop.test/]
request: { headers: { x-task: '\${CRAWL_STUDIO_T_SET_KEY}' } }
rules:
  - name: page
    request:
      headers: { authorization: 'Bearer \${CRAWL_STUDIO_T_UNSET_KEY}' }
`;
    const { task, diagnostics } = parseTask(yaml, 'hdr.crawl.yaml');
    assert.ok(task, 'a warning, not an error: the workers may have the variable');
    const lines = diagnostics.map((d) => formatDiagnostic(d));
    assert.equal(lines.length, 1, lines.join('\n'));
    assert.match(
      lines[0]!,
      /hdr\.crawl\.yaml:7:.*warning.*rules\[0\]\.request\.headers\.authorization.*environment variable CRAWL_STUDIO_T_UNSET_KEY is not set here/,
    );
    // And `validate` says so, as it does for login and proxy.
    const dir = tempDir('cs-hdr-');
    writeFileSync(join(dir, 'hdr.crawl.yaml'), yaml);
    const { stdout, stderr } = await promisify(execFile)(
      process.execPath,
      [resolve('dist/cli.js'), 'validate', join(dir, 'hdr.crawl.yaml')],
      { env: { ...process.env, CRAWL_STUDIO_T_UNSET_KEY: undefined } },
    );
    assert.match(stdout + stderr, /hdr\.crawl\.yaml:7:.*CRAWL_STUDIO_T_UNSET_KEY is not set here/);
  });

  it('expands only CRAWL_STUDIO_* variables, encoded for the URL part they land in', () => {
    const env = { CRAWL_STUDIO_U: 'a@b', CRAWL_STUDIO_P: 'p:w/d', HOME: '/root' };
    assert.deepEqual(expandValue('${CRAWL_STUDIO_U}-${HOME}-${CRAWL_STUDIO_X}', env), {
      value: 'a@b--',
      missing: ['HOME', 'CRAWL_STUDIO_X'],
    });
    assert.deepEqual(expandJson({ a: ['${CRAWL_STUDIO_P}'], n: 1 }, env).value, { a: ['p:w/d'], n: 1 });
    assert.equal(
      expandProxyUrl('http://${CRAWL_STUDIO_U}:${CRAWL_STUDIO_P}@127.0.0.1:8/', env).url,
      'http://a%40b:p%3Aw%2Fd@127.0.0.1:8/',
    );
    assert.match(expandProxyUrl('http://${HOME}@h:1', env).problems[0]!, /not expanded/);
    assert.equal(hasLiteralCredentials('http://u:pw@h:1'), true);
    assert.equal(hasLiteralCredentials('http://u:${CRAWL_STUDIO_P}@h:1'), false);
    assert.equal(hasLiteralCredentials('http://h:1'), false);
  });
});
