import { strict as assert } from 'node:assert';
import { readFileSync } from 'node:fs';
import { formatDiagnostic } from '../../src/core/task/diagnostics';
// The front ends' parse: the task's ${VAR}s read from this process's environment (core's parseTask takes it as an argument).
import { parseTaskText as parseTask } from '../../src/workspace/taskFile';
import { redactUrl } from '../../src/core/url/redact';
import { parseTask as parseCoreTask } from '../../src/core/task/parse';
import { parseStoreUrl } from '../../src/core/task/storeUrl';
import { resolveStoreUrl } from '../../src/store/open';

// Issue 22, items 3 and 5: store.url's ${VAR} expansion (which variables, encoded for where they land, never in a
// message), redaction of URLs that do not parse, and SQLite paths kept in the task file's folder.

/** Sets environment variables for the duration of `fn`. */
function withEnv<T>(vars: Record<string, string>, fn: () => T): T {
  const old = Object.fromEntries(Object.keys(vars).map((k) => [k, process.env[k]]));
  Object.assign(process.env, vars);
  try {
    return fn();
  } finally {
    for (const [k, v] of Object.entries(old)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}

const withStore = (url: string, extra = '') => `name: t
start: [https://example.com/]
store:
  url: "${url}"
rules:
  - name: page${extra}
`;

const lines = (r: ReturnType<typeof parseTask>) => r.diagnostics.map(formatDiagnostic);

describe('task file store.url (issue 22)', () => {
  describe('store.url ${VAR} expansion', () => {
    for (const secret of ['sec/ret', 'p@ss:w/rd', 'a?b#c d%20e']) {
      it(`encodes a password such as '${secret}' so the URL still points at its host`, () => {
        // $PGHOST names the host the password may go to (issue 35: never to a host only the file names).
        const r = withEnv({ PGPASSWORD: secret, PGHOST: 'db.example' }, () =>
          parseTask(withStore('postgres://crawler:${PGPASSWORD}@db.example:5432/crawl'), 't.yaml'),
        );
        assert.deepEqual(lines(r), []);
        const target = resolveStoreUrl(r.task!.store.url!);
        assert.equal(target.kind, 'postgres');
        const u = new URL((target as { url: string }).url);
        assert.equal(u.hostname, 'db.example');
        assert.equal(u.port, '5432');
        assert.equal(u.pathname, '/crawl');
        assert.equal(decodeURIComponent(u.password), secret);
      });
    }

    it('encodes values in the database name and query too, and refuses a host value holding URL syntax', () => {
      const r = withEnv({ CRAWL_STUDIO_DB: 'my db', CRAWL_STUDIO_SSL: 'a&b=c' }, () =>
        parseTask(withStore('postgres://u@h/${CRAWL_STUDIO_DB}?sslmode=${CRAWL_STUDIO_SSL}'), 't.yaml'),
      );
      assert.equal(r.task!.store.url, 'postgres://u@h/my%20db?sslmode=a%26b%3Dc');
      const bad = withEnv({ PGHOST: 'evil.example/x@', PGPASSWORD: 'hunter2' }, () =>
        parseTask(withStore('postgres://u:${PGPASSWORD}@${PGHOST}/db'), 't.yaml'),
      );
      assert.equal(bad.task, null);
      const all = lines(bad).join('\n');
      assert.match(all, /^t\.yaml:4:8: error: store\.url: \$\{PGHOST\} is in the host part/m);
      assert.ok(!all.includes('evil.example') && !all.includes('hunter2'), all);
    });

    it('expands only CRAWL_STUDIO_* and the libpq variables; another is a located error, never expanded', () => {
      const r = withEnv({ CRAWL_STUDIO_PW: 'ok', AWS_SECRET_ACCESS_KEY: 'AKIAsecret' }, () =>
        parseTask(withStore('postgres://u:${CRAWL_STUDIO_PW}@localhost/${AWS_SECRET_ACCESS_KEY}'), 'aws.yaml'),
      );
      assert.equal(r.task, null);
      const all = lines(r);
      assert.equal(all.length, 1, all.join('\n'));
      assert.match(
        all[0]!,
        /^aws\.yaml:4:8: error: store\.url: \$\{AWS_SECRET_ACCESS_KEY\} is not expanded: a task file may use only variables named CRAWL_STUDIO_\*/,
      );
      assert.ok(!all[0]!.includes('AKIAsecret'));
      const ok = withEnv({ CRAWL_STUDIO_PW: 'pw', PGHOST: 'db.internal', PGPORT: '5433' }, () =>
        parseTask(withStore('postgres://u:${CRAWL_STUDIO_PW}@${PGHOST}:${PGPORT}/db'), 't.yaml'),
      );
      assert.equal(ok.task!.store.url, 'postgres://u:pw@db.internal:5433/db');
    });

    it('quotes the template, not the expanded value, when the result is not a URL', () => {
      const r = withEnv({ PGPORT: 'hunter2' }, () => parseTask(withStore('postgres://u@h:${PGPORT}/db'), 't.yaml'));
      assert.equal(r.task, null);
      const all = lines(r).join('\n');
      assert.match(
        all,
        /store\.url: 'postgres:\/\/u@h:\$\{PGPORT\}\/db' is not a valid URL once its variables are expanded/,
      );
      assert.ok(!all.includes('hunter2'), all);
    });
  });

  describe('redactUrl', () => {
    it('never prints any part of a password, parsable URL or not', () => {
      const cases: [string, string[]][] = [
        ['postgres://crawler:p@ss:w/rd@db.example:5432/crawl', ['p@ss', 'ss:w', 'w/rd']],
        ['postgres://crawler:sec/ret@db.example/crawl', ['sec/ret', 'ret@']],
        // Parses (port 123, path "/ret@h"), so a parse-based redaction finds no password to hide.
        ['postgres://u:123/ret@h/db', ['123', '/ret']],
        ['redis://:to?ken#x@127.0.0.1:6379', ['to?ken', 'ken#x']],
        ['u:hunter2@host/db', ['hunter2']],
      ];
      for (const [url, secrets] of cases) {
        const shown = redactUrl(url);
        for (const s of secrets) assert.ok(!shown.includes(s), `${url} shown as ${shown}`);
        assert.match(shown, /\*\*\*/, shown);
      }
    });

    it('keeps the user, host and database of a well-formed URL readable', () => {
      assert.equal(
        redactUrl('postgres://crawler:secret@db.example:5432/crawl'),
        'postgres://crawler:***@db.example:5432/crawl',
      );
      assert.equal(redactUrl('redis://127.0.0.1:6379/0'), 'redis://127.0.0.1:6379/0');
      assert.equal(redactUrl('postgresql://u@h/db'), 'postgresql://u@h/db');
    });

    it('gives the CLI a message without the secret for an unencoded password', () => {
      assert.throws(
        () => resolveStoreUrl('postgres://crawler:p@ss:w/rd@db.example:5432/crawl'),
        (err: Error) => !/ss:w|w\/rd|p@ss/.test(err.message) && /not a valid URL/.test(err.message),
      );
    });
  });

  describe('SQLite store path', () => {
    it("refuses a relative path out of the task file's folder, at the field", () => {
      for (const url of [
        'sqlite:../../../other-app/data.db',
        'sqlite:.crawl/../../x.sqlite',
        '../shared.db',
        'sqlite://../x.db',
      ]) {
        const r = parseTask(withStore(url), 'tasks/t.crawl.yaml');
        assert.equal(r.task, null, url);
        assert.match(
          lines(r).join('\n'),
          /^tasks\/t\.crawl\.yaml:4:8: error: store\.url: '.*' points outside the task file's folder/m,
          url,
        );
      }
    });

    it('accepts paths inside the folder and absolute paths, given on purpose', () => {
      for (const url of [
        'sqlite:.crawl/items.sqlite',
        'sqlite:data/../items.db',
        'items.sqlite3',
        'sqlite:/var/lib/crawl/items.sqlite',
        'sqlite:C:/crawl/x.db',
      ]) {
        assert.deepEqual(lines(parseTask(withStore(url), 't.yaml')), [], url);
      }
    });
  });

  it('expands the example of docs/task-file.md', () => {
    const doc = readFileSync('docs/task-file.md', 'utf8');
    const example = /```yaml\n(store:[\s\S]*?)```/.exec(doc)![1]!;
    const r = withEnv({ PGPASSWORD: 'pw', CRAWL_STUDIO_DB_HOST: 'db.example' }, () =>
      parseTask(`name: t\nstart: [https://example.com/]\n${example}rules:\n  - name: page\n`, 't.yaml'),
    );
    assert.deepEqual(lines(r), []);
    assert.equal(r.task!.store.url, 'postgres://crawler:pw@db.example:5432/crawl');
  });
});

describe('store URLs: the one parser (core/task/storeUrl.ts)', () => {
  it('keeps a SQLite path as written and takes the schema out of a PostgreSQL URL', () => {
    assert.deepEqual(parseStoreUrl('sqlite:.crawl/x.sqlite'), { kind: 'sqlite', path: '.crawl/x.sqlite' });
    assert.deepEqual(parseStoreUrl('sqlite://../x.db'), { kind: 'sqlite', path: '../x.db' });
    assert.deepEqual(parseStoreUrl('items.sqlite3'), { kind: 'sqlite', path: 'items.sqlite3' });
    assert.deepEqual(parseStoreUrl('postgres://u:pw@h/db?schema=mine&sslmode=require'), {
      kind: 'postgres',
      url: 'postgres://u:pw@h/db?sslmode=require',
      schema: 'mine',
    });
    assert.deepEqual(parseStoreUrl('postgresql://u@h/db'), {
      kind: 'postgres',
      url: 'postgresql://u@h/db',
      schema: null,
    });
    assert.throws(() => parseStoreUrl(`postgres://h/db?schema=${'s'.repeat(64)}`), /longer than 63 characters/);
    assert.throws(
      () => parseStoreUrl('https://u:secret@h/x'),
      (err: Error) => /unsupported store URL/.test(err.message) && !err.message.includes('secret'),
    );
  });

  it("resolves a relative SQLite path against the caller's folder, and names the default schema after the task", () => {
    assert.deepEqual(resolveStoreUrl('sqlite:.crawl/x.sqlite', { cwd: '/w' }), {
      kind: 'sqlite',
      path: '/w/.crawl/x.sqlite',
    });
    assert.deepEqual(resolveStoreUrl('postgres://u@h/db', { task: 'shop' }), {
      kind: 'postgres',
      url: 'postgres://u@h/db',
      schema: 'crawl_shop',
    });
    assert.deepEqual(resolveStoreUrl('postgres://u@h/db'), {
      kind: 'postgres',
      url: 'postgres://u@h/db',
      schema: 'public',
    });
  });
});

describe('task parse: the environment is an argument (src/core reads no process.env)', () => {
  it('expands store.url from the environment it is given, not from process.env', () => {
    const text =
      'name: t\nstart: [https://example.com/]\nstore:\n  url: postgres://u@${PGHOST}/db\nrules:\n  - name: page\n';
    const given = parseCoreTask(text, 't.yaml', { env: { PGHOST: 'db.example' } });
    assert.equal(given.task?.store.url, 'postgres://u@db.example/db');
    const none = parseCoreTask(text, 't.yaml', { env: {} });
    assert.equal(none.task, null);
    assert.match(none.diagnostics.map((d) => d.message).join('\n'), /PGHOST is not set/);
  });
});
