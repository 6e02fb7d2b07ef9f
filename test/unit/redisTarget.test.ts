import assert from 'node:assert/strict';
import {
  formatRedisTarget,
  joinPasswords,
  parseRedisTarget,
  RedisTargetError,
  splitPasswords,
  targetDatabase,
  targetFromFlags,
  type RedisPasswords,
  type RedisTarget,
} from '../../src/core/url/redisTarget';
import { redactUrl } from '../../src/core/url/redact';
import { redisTargetFrom } from '../../src/worker/args';

// The one string that names a Redis deployment (issue 19): a node, a master behind sentinels, or a cluster.

describe('Redis targets', () => {
  describe('parseRedisTarget', () => {
    it('hands redis:// and rediss:// URLs and socket paths to ioredis unchanged', () => {
      for (const url of ['redis://127.0.0.1:6379', 'rediss://u:p@h:6380/2', '/run/redis.sock'])
        assert.deepEqual(parseRedisTarget(url), { kind: 'node', url });
    });

    it("reads sentinels, the master name, the data nodes' and the sentinels' credentials and the database", () => {
      assert.deepEqual(
        parseRedisTarget(
          'redis+sentinel://crawler:p%40ss%2Fw%3Ard@10.0.0.1:26379,sentinel-b,[::1]:26380/my%20master?db=3&sentinelPassword=s%26cret&sentinelUsername=watch',
        ),
        {
          kind: 'sentinel',
          tls: false,
          sentinels: [
            { host: '10.0.0.1', port: 26379 },
            { host: 'sentinel-b', port: 26379 },
            { host: '::1', port: 26380 },
          ],
          masterName: 'my master',
          db: 3,
          username: 'crawler',
          password: 'p@ss/w:rd',
          sentinelUsername: 'watch',
          sentinelPassword: 's&cret',
        },
      );
      assert.deepEqual(parseRedisTarget('rediss+sentinel://s1:1/m'), {
        kind: 'sentinel',
        tls: true,
        sentinels: [{ host: 's1', port: 1 }],
        masterName: 'm',
        db: 0,
      });
    });

    it('reads cluster seed nodes (default port 6379) and the password', () => {
      assert.deepEqual(parseRedisTarget('redis+cluster://:pw@127.0.0.1:7000,127.0.0.1:7001,node-c'), {
        kind: 'cluster',
        tls: false,
        nodes: [
          { host: '127.0.0.1', port: 7000 },
          { host: '127.0.0.1', port: 7001 },
          { host: 'node-c', port: 6379 },
        ],
        password: 'pw',
      });
      assert.equal(parseRedisTarget('rediss+cluster://h:1/0').kind, 'cluster');
    });

    it('refuses what it cannot use, saying what and how, without the password', () => {
      const cases: [string, RegExp][] = [
        ['localhost:6379', /not a Redis URL: use redis:\/\/host:6379, redis\+sentinel:/],
        ['redis+sentinal://h/m', /unknown scheme 'redis\+sentinal'/],
        ['redis+sentinel://h:26379', /no master name/],
        ['redis+sentinel://h:26379/', /no master name/],
        ['redis+sentinel://h/m/2', /master name alone; for a database write \?db=N/],
        ['redis+sentinel://h/m?db=x', /db must be a whole number/],
        ['redis+sentinel://h/m?db=-1', /db must be a whole number/],
        [
          'redis+sentinel://h/m?password=x',
          /unknown parameter 'password': redis\+sentinel:\/\/ takes db, sentinelUsername, sentinelPassword/,
        ],
        ['redis+sentinel://h/m?db=1&db=2', /'db' is given more than once/],
        ['redis+sentinel:///m', /no host/],
        ['redis+sentinel://h:0/m', /host 1 of the list is not host:port/],
        ['redis+sentinel://h:70000/m', /host 1 of the list/],
        ['redis+sentinel://a:1,,b:2/m', /host 2 of the list/],
        ['redis+cluster://h:7000/3', /only database 0/],
        ['redis+cluster://h:7000?db=1', /unknown parameter 'db': redis\+cluster:\/\/ takes none/],
        ['redis+cluster://h:7000#x', /no '#' part/],
        ['redis+cluster://:p%zz@h', /'%' that is not a percent-encoding/],
      ];
      for (const [text, message] of cases) {
        assert.throws(
          () => parseRedisTarget(text),
          (err: Error) => err instanceof RedisTargetError && message.test(err.message),
          text,
        );
      }
      // Unencoded '/' and '@' in passwords: the error quotes no part of the password.
      for (const [text, secret] of [
        ['redis+cluster://:se/cret@h:7000', 'se/cret'],
        ['redis+sentinel://u:hunt@er2@h/m', 'hunt'],
        ['redis+sentinel://u:pw@h/m?sentinelPassword=sp&x=1', 'sp'],
        ['redis+cluster://:a,b@h:1', 'a,b'],
      ] as const) {
        let message = '';
        try {
          parseRedisTarget(text);
        } catch (err) {
          message = (err as Error).message;
        }
        if (message) assert.ok(!message.includes(secret), message);
      }
    });
  });

  it('formatRedisTarget writes what parseRedisTarget reads', () => {
    const targets: RedisTarget[] = [
      {
        kind: 'sentinel',
        tls: false,
        sentinels: [
          { host: '10.0.0.1', port: 26379 },
          { host: '::1', port: 5 },
        ],
        masterName: 'm/1 x',
        db: 2,
        username: 'u@x',
        password: 'p@ss:w/rd,&',
        sentinelPassword: 'a&b=c#d',
      },
      { kind: 'sentinel', tls: true, sentinels: [{ host: 'h', port: 1 }], masterName: 'mymaster', db: 0 },
      {
        kind: 'cluster',
        tls: false,
        nodes: [
          { host: 'a', port: 7000 },
          { host: 'b', port: 7001 },
        ],
        password: 'x',
      },
      { kind: 'node', url: 'redis://h:1' },
    ];
    for (const t of targets) assert.deepEqual(parseRedisTarget(formatRedisTarget(t)), t);
  });

  it('splitPasswords and joinPasswords keep passwords apart from the text, for every form', () => {
    const cases: [string, string, RedisPasswords][] = [
      [
        'redis+sentinel://u:p%40w@h/m?db=1&sentinelPassword=s%26',
        'redis+sentinel://u@h:26379/m?db=1',
        { password: 'p@w', sentinelPassword: 's&' },
      ],
      ['redis+cluster://:pw@h:1,h:2', 'redis+cluster://h:1,h:2', { password: 'pw' }],
      ['redis://:p%2Fw@h:6379/2', 'redis://h:6379/2', { password: 'p/w' }],
      ['redis://h:6379', 'redis://h:6379', {}],
    ];
    for (const [text, target, passwords] of cases) {
      const split = splitPasswords(text);
      assert.deepEqual(split, { target, passwords }, text);
      assert.deepEqual(parseRedisTarget(joinPasswords(split.target, split.passwords)), parseRedisTarget(text), text);
    }
    // A password written in the text wins over the one kept apart.
    assert.equal(joinPasswords('redis+cluster://:mine@h:1', { password: 'kept' }), 'redis+cluster://:mine@h:1');
  });

  it('targetFromFlags: --sentinel with --sentinel-master, --cluster, passwords from the environment', () => {
    assert.equal(
      targetFromFlags({
        sentinel: '10.0.0.1,10.0.0.2:26380',
        sentinelMaster: 'mymaster',
        password: 'p@w',
        sentinelPassword: 's',
      }),
      'redis+sentinel://:p%40w@10.0.0.1:26379,10.0.0.2:26380/mymaster?sentinelPassword=s',
    );
    assert.equal(targetFromFlags({ cluster: 'a:7000,b:7001' }), 'redis+cluster://a:7000,b:7001');
    assert.equal(targetFromFlags({}), null);
    assert.throws(() => targetFromFlags({ sentinel: 'a' }), /--sentinel needs --sentinel-master/);
    assert.throws(() => targetFromFlags({ sentinelMaster: 'm' }), /--sentinel-master needs --sentinel/);
    assert.throws(() => targetFromFlags({ sentinel: 'a', sentinelMaster: 'm', cluster: 'b' }), /give one/);
    assert.throws(() => targetFromFlags({ cluster: 'a:x' }), /host 1 of the list is not host:port/);
  });

  describe('redactUrl on Sentinel and Cluster targets', () => {
    it("hides the data nodes' and the sentinels' passwords, keeps hosts, master, database and user", () => {
      assert.equal(
        redactUrl('redis+sentinel://crawler:pw@h1:26379,h2:26379/mymaster?db=2&sentinelPassword=spw'),
        'redis+sentinel://crawler:***@h1:26379,h2:26379/mymaster?db=2&sentinelPassword=***',
      );
      assert.equal(
        redactUrl('redis+sentinel://h1,h2/m?sentinelUsername=w&sentinelPassword=spw&db=1'),
        'redis+sentinel://h1,h2/m?sentinelUsername=w&sentinelPassword=***&db=1',
      );
      assert.equal(
        redactUrl('redis+cluster://:pw@127.0.0.1:7000,127.0.0.1:7001'),
        'redis+cluster://:***@127.0.0.1:7000,127.0.0.1:7001',
      );
      assert.equal(
        redactUrl('redis+cluster://127.0.0.1:7000,127.0.0.1:7001'),
        'redis+cluster://127.0.0.1:7000,127.0.0.1:7001',
      );
      assert.equal(
        redactUrl('postgres://h/db?sslmode=require&password=x'),
        'postgres://h/db?sslmode=require&password=***',
      );
    });

    it('never prints any part of a password, encoded properly or not', () => {
      const cases: [string, string[]][] = [
        ['redis+sentinel://u:p@ss,w@h1,h2/m', ['p@ss', 'ss,w']],
        ['redis+sentinel://h1,h2/m?sentinelPassword=ab&cd', ['ab', 'cd']],
        ['redis+sentinel://h1,h2/m?sentinelPassword=ab#cd&db=1', ['ab', 'cd']],
        ['redis+sentinel://h1,h2/m?db=1&sentinelPassword=p@x/y', ['p@x', 'x/y']],
        ['redis+sentinel://:top/secret@h1,h2/m?sentinelPassword=s3', ['top', 'secret', 's3']],
        ['rediss+cluster://u:hunter2@a:1,b:2', ['hunter2']],
        // A '?' and a secret-looking name inside an unencoded password.
        ['redis://:a?password=b@h:6379', ['a?', 'b@']],
      ];
      for (const [url, secrets] of cases) {
        const shown = redactUrl(url);
        for (const s of secrets) assert.ok(!shown.includes(s), `${url} shown as ${shown}`);
      }
    });
  });
});

// Issue 35, item 10: `--redis redis://:pw@…` was taken without a word about the password now in the process list,
// and `redis://:Bad%ZZ@…` said only "URI malformed" (ioredis decoding it), naming neither the setting nor the part.
describe('Redis targets: messages that say which setting and which part (issue 35, item 10)', () => {
  const captureStderr = (fn: () => void): string => {
    const write = process.stderr.write.bind(process.stderr);
    let out = '';
    process.stderr.write = (chunk: string | Uint8Array) => ((out += String(chunk)), true);
    try {
      fn();
    } finally {
      process.stderr.write = write;
    }
    return out;
  };

  it('a bad percent-encoding in a redis:// password names --redis or $CRAWL_STUDIO_REDIS and the password, never the password itself', () => {
    assert.throws(
      () => parseRedisTarget('redis://:Bad%ZZ@127.0.0.1:6390'),
      /^RedisTargetError: Redis target redis:\/\/:\*\*\*@127\.0\.0\.1:6390: the password holds a '%' that is not a percent-encoding \(write '%' as %25\)$/,
    );
    assert.throws(() => parseRedisTarget('rediss://us%ZZer:pw@h:6380'), /the user name holds a '%'/);
    const flag = (() => {
      try {
        redisTargetFrom({ redis: 'redis://:Bad%ZZ@127.0.0.1:6390' }, {});
      } catch (err) {
        return (err as Error).message;
      }
      return '';
    })();
    assert.match(
      flag,
      /^--redis: Redis target redis:\/\/:\*\*\*@127\.0\.0\.1:6390: the password holds a '%' that is not a percent-encoding/,
    );
    assert.ok(!flag.includes('Bad'));
    assert.throws(
      () => redisTargetFrom({}, { CRAWL_STUDIO_REDIS: 'redis://:Bad%ZZ@127.0.0.1:6390' }),
      /^RedisTargetError: \$CRAWL_STUDIO_REDIS: Redis target redis:\/\/:\*\*\*@.*: the password holds/,
    );
  });

  it('--redis with a password warns that other users can read it, pointing to $CRAWL_STUDIO_REDIS; the environment does not warn', () => {
    const said = captureStderr(() =>
      assert.equal(redisTargetFrom({ redis: 'redis://:pw@127.0.0.1:6390' }, {}), 'redis://:pw@127.0.0.1:6390'),
    );
    assert.match(
      said,
      /^warning: the --redis URL holds a password, which every user of this machine can read in the process list \(ps, \/proc\/PID\/cmdline\): put the URL in \$CRAWL_STUDIO_REDIS instead/,
    );
    assert.ok(!said.includes(':pw@'));
    for (const redis of [
      'redis+sentinel://:pw@h:26379/m',
      'redis+sentinel://h:26379/m?sentinelPassword=s',
      'redis+cluster://:pw@h:7000',
    ]) {
      assert.match(
        captureStderr(() => redisTargetFrom({ redis }, {})),
        /holds a password/,
        redis,
      );
    }
    assert.equal(
      captureStderr(() => redisTargetFrom({ redis: 'redis://127.0.0.1:6390' }, {})),
      '',
    );
    assert.equal(
      captureStderr(() => redisTargetFrom({}, { CRAWL_STUDIO_REDIS: 'redis://:pw@127.0.0.1:6390' })),
      '',
    );
  });
});

describe('targetDatabase: the database a target names (checked before a crawl uses it)', () => {
  it('reads /N and ?db=N of a node, ?db=N of a Sentinel target, and 0 otherwise', () => {
    const db = (t: string) => targetDatabase(parseRedisTarget(t));
    assert.equal(db('redis://h:6379'), 0);
    assert.equal(db('redis://h:6379/'), 0);
    assert.equal(db('redis://:pw@h:6379/3'), 3);
    assert.equal(db('redis://h:6379?db=5'), 5);
    assert.equal(db('redis+sentinel://h:26379/mymaster?db=2'), 2);
    assert.equal(db('redis+cluster://h:7000,h:7001'), 0);
  });
});
