// The servers a benchmark run needs, each private to the run: nginx serving the fixture site, redis-server
// with the settings Crawl Studio's own managed Redis uses, and a throwaway PostgreSQL cluster. Every one listens
// on loopback only (127.0.0.1; the broad-crawl nginx on 127.0.0.2 …), lives in a temp folder, and is stopped by
// its stop() (run.mjs stops them all on exit).
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { connect, createServer } from 'node:net';
import { join } from 'node:path';
import { sleep } from './procs.mjs';

export function freePort() {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

export async function waitForPort(port, timeoutMs = 15_000, host = '127.0.0.1') {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const ok = await new Promise((resolve) => {
      const s = connect(port, host);
      s.once('connect', () => (s.destroy(), resolve(true)));
      s.once('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`nothing listens on ${host}:${port}`);
    await sleep(50);
  }
}

async function stopChild(child, signal = 'SIGTERM', graceMs = 5_000) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill(signal);
  await Promise.race([exited, sleep(graceMs)]);
  if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
}

/**
 * nginx from Debian, one worker, serving `root` with an access log of `$msec $status $bytes $request_uri`.
 * `hosts` (loopback addresses, e.g. 127.0.0.2 … 127.0.0.201; Linux routes all of 127/8 to lo): one server listening
 * on every one of them on the same port, each serving `root/<address>/`, and each logged request carries its
 * address (`host` in `requests()`): the broad-crawl row's many sites in one nginx.
 */
export async function startNginx({ root, dir, workers = 1, hosts = null }) {
  const bin = ['/usr/sbin/nginx', '/usr/bin/nginx'].find(existsSync);
  if (!bin) throw new Error('nginx is not installed: run bench/setup.sh (apt-get install -y nginx)');
  mkdirSync(join(dir, 'tmp'), { recursive: true });
  const port = await freePort();
  const root_ = typeof process.getuid === 'function' && process.getuid() === 0;
  // Cached open files hold descriptors: a cache larger than the descriptor limit made nginx answer 500 ("Too many
  // open files") part-way through the ~50,000-page linearity site. Half the limit leaves room for connections.
  const nofile = Number(spawnSync('sh', ['-c', 'ulimit -n'], { encoding: 'utf8' }).stdout.trim()) || 1024;
  const fileCache = Math.max(256, Math.min(100_000, Math.floor(nofile / 2)));
  const conf = `
${root_ ? 'user root;' : ''}
daemon off;
worker_processes ${workers};
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 4096; }
http {
  types { text/html html; text/plain txt; image/jpeg jpg; }
  default_type application/octet-stream;
  charset utf-8;
  log_format bench '$msec $status $body_bytes_sent ${hosts ? '$server_addr ' : ''}$request_uri';
  access_log ${dir}/access.log bench;
  sendfile on;
  tcp_nopush on;
  tcp_nodelay on;
  keepalive_timeout 65;
  keepalive_requests 1000000;
  open_file_cache max=${fileCache} inactive=120s;
  open_file_cache_valid 120s;
  client_body_temp_path ${dir}/tmp/body;
  proxy_temp_path ${dir}/tmp/proxy;
  fastcgi_temp_path ${dir}/tmp/fastcgi;
  uwsgi_temp_path ${dir}/tmp/uwsgi;
  scgi_temp_path ${dir}/tmp/scgi;
  server {
${hosts ? hosts.map((h) => `    listen ${h}:${port} backlog=4096;`).join('\n') : `    listen 127.0.0.1:${port} backlog=4096;`}
    root ${root}${hosts ? '/$server_addr' : ''};
    location / { index index.html; }
  }
}
`;
  writeFileSync(join(dir, 'nginx.conf'), conf);
  writeFileSync(join(dir, 'access.log'), '');
  const child = spawn(bin, ['-p', dir, '-c', join(dir, 'nginx.conf')], { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  child.stderr.on('data', (b) => (err += b));
  await Promise.race([
    waitForPort(port, 15_000, hosts ? hosts[0] : '127.0.0.1'),
    new Promise((_, reject) => child.once('exit', (c) => reject(new Error(`nginx exited (${c}): ${err}`)))),
  ]);
  const log = join(dir, 'access.log');
  return {
    url: `http://${hosts ? hosts[0] : '127.0.0.1'}:${port}`,
    urls: hosts ? hosts.map((h) => `http://${h}:${port}`) : null,
    port,
    pid: child.pid,
    log,
    /** Byte offset of the access log now: pass it to `requests` to see only what came after. */
    mark: () => readFileSync(log).length,
    /** Requests logged since `from`: [{ t (s), status, bytes, uri }] (and `host`, the address, with `hosts`). */
    requests(from = 0) {
      const text = readFileSync(log).subarray(from).toString('utf8');
      return text
        .split('\n')
        .filter(Boolean)
        .map((l) => {
          const [t, status, bytes, ...rest] = l.split(' ');
          const host = hosts ? rest.shift() : undefined;
          return {
            t: Number(t),
            status: Number(status),
            bytes: Number(bytes),
            uri: rest.join(' '),
            ...(hosts ? { host } : {}),
          };
        });
    },
    workerPids() {
      return readdirSync('/proc')
        .filter((n) => /^\d+$/.test(n))
        .filter((n) => {
          try {
            return readFileSync(`/proc/${n}/stat`, 'utf8').split(') ')[1].split(' ')[1] === String(child.pid);
          } catch {
            return false;
          }
        })
        .map(Number);
    },
    stop: () => stopChild(child, 'SIGQUIT'),
  };
}

/** redis-server with the settings of Crawl Studio's managed Redis (AOF everysec, intset limit 2048). */
export async function startRedis({ dir, appendOnly = true, extra = [] }) {
  mkdirSync(dir, { recursive: true });
  const port = await freePort();
  const args = [
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--dir',
    dir,
    '--save',
    '',
    '--appendonly',
    appendOnly ? 'yes' : 'no',
    '--appendfsync',
    'everysec',
    '--set-max-intset-entries',
    '2048',
    '--daemonize',
    'no',
    ...extra,
  ];
  const child = spawn('redis-server', args, { stdio: ['ignore', 'ignore', 'pipe'] });
  await Promise.race([
    waitForPort(port),
    new Promise((_, reject) =>
      child.once('error', (e) =>
        reject(new Error(`cannot start redis-server: ${e.message} (apt-get install redis-server)`)),
      ),
    ),
  ]);
  return { url: `redis://127.0.0.1:${port}`, port, pid: child.pid, stop: () => stopChild(child) };
}

/**
 * A 3-primary Redis Cluster on loopback with the same settings as startRedis (issue 19's cluster rows): each node in
 * a folder of its own, joined by `redis-cli --cluster create`, ready once every node reports cluster_state:ok. The
 * URL is the engine's `redis+cluster://` form.
 */
export async function startRedisCluster({ dir, appendOnly = true, primaries = 3 }) {
  const nodes = [];
  for (let i = 0; i < primaries; i++) {
    const d = join(dir, `node-${i}`);
    const node = await startRedis({
      dir: d,
      appendOnly,
      extra: [
        '--cluster-enabled',
        'yes',
        '--cluster-port',
        String(await freePort()),
        '--cluster-config-file',
        join(d, 'nodes.conf'),
        '--cluster-node-timeout',
        '5000',
      ],
    });
    nodes.push(node);
  }
  const stopAll = () => Promise.all(nodes.map((n) => n.stop()));
  const create = spawnSync(
    'redis-cli',
    ['--cluster', 'create', ...nodes.map((n) => `127.0.0.1:${n.port}`), '--cluster-yes'],
    { encoding: 'utf8' },
  );
  if (create.status !== 0) {
    await stopAll();
    throw new Error(`redis-cli --cluster create failed: ${create.stderr || create.stdout}`);
  }
  for (const n of nodes) {
    const deadline = Date.now() + 30_000;
    while (
      !/cluster_state:ok/.test(
        spawnSync('redis-cli', ['-p', String(n.port), 'cluster', 'info'], { encoding: 'utf8' }).stdout ?? '',
      )
    ) {
      if (Date.now() > deadline) {
        await stopAll();
        throw new Error(`cluster node ${n.port} not ok after 30 s`);
      }
      await sleep(100);
    }
  }
  return {
    url: `redis+cluster://${nodes.map((n) => `127.0.0.1:${n.port}`).join(',')}`,
    nodes,
    pids: nodes.map((n) => n.pid),
    stop: stopAll,
  };
}

/** INFO as { section: { key: value } }, over a raw socket (no client library needed). */
export function redisInfo(port, section = 'everything') {
  return new Promise((resolve, reject) => {
    const s = connect(port, '127.0.0.1');
    let buf = '';
    s.once('connect', () => s.write(`INFO ${section}\r\n`));
    s.on('data', (b) => {
      buf += b.toString('utf8');
      const m = /^\$(\d+)\r\n/.exec(buf);
      if (m && Buffer.byteLength(buf) >= m[0].length + Number(m[1]) + 2) {
        s.end();
        const out = {};
        for (const line of buf.slice(m[0].length).split('\r\n')) {
          const i = line.indexOf(':');
          if (i > 0) out[line.slice(0, i)] = line.slice(i + 1);
        }
        resolve(out);
      }
    });
    s.once('error', reject);
  });
}

/** Total calls per command from `INFO commandstats` (cmdstat_xxx:calls=N,...). */
export function commandCalls(info) {
  const out = {};
  for (const [k, v] of Object.entries(info)) {
    if (!k.startsWith('cmdstat_')) continue;
    out[k.slice(8)] = Number(/calls=(\d+)/.exec(v)?.[1] ?? 0);
  }
  return out;
}

/** Microseconds Redis spent in each command (INFO commandstats `usec`; a script's commands count in its EVALSHA). */
export function commandUsec(info) {
  const out = {};
  for (const [k, v] of Object.entries(info)) {
    if (!k.startsWith('cmdstat_')) continue;
    out[k.slice(8)] = Number(/usec=(\d+)/.exec(v)?.[1] ?? 0);
  }
  return out;
}

export function findPostgresBin() {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return null;
  const v = readdirSync(root)
    .filter((x) => existsSync(join(root, x, 'bin', 'initdb')))
    .sort((a, b) => Number(b) - Number(a))[0];
  return v ? join(root, v, 'bin') : null;
}

/** A throwaway PostgreSQL cluster (as the `postgres` user when root), fsync off like the test suite's. */
export async function startPostgres({ dir }) {
  const bin = findPostgresBin();
  if (!bin) throw new Error('PostgreSQL is not installed (apt-get install -y postgresql)');
  mkdirSync(dir, { recursive: true });
  const root = process.getuid?.() === 0;
  const as = (b, a) => (root ? ['runuser', ['-u', 'postgres', '--', b, ...a]] : [b, a]);
  if (root) {
    const uid = Number(execFileSync('id', ['-u', 'postgres']).toString().trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres']).toString().trim());
    chownSync(dir, uid, gid);
  }
  const data = join(dir, 'data');
  const port = await freePort();
  const run = (b, a) => {
    const [c, argv] = as(b, a);
    const r = spawnSync(c, argv, { encoding: 'utf8', timeout: 60_000 });
    if (r.status !== 0) throw new Error(`${b} failed: ${r.stderr || r.stdout}`);
  };
  run(join(bin, 'initdb'), ['-D', data, '-U', 'postgres', '--auth=trust', '--no-sync', '-E', 'UTF8', '--locale=C']);
  const opts = `-p ${port} -c listen_addresses=127.0.0.1 -c unix_socket_directories=${dir} -c fsync=off -c full_page_writes=off`;
  run(join(bin, 'pg_ctl'), ['-D', data, '-o', opts, '-l', join(dir, 'server.log'), '-w', '-t', '30', 'start']);
  await waitForPort(port);
  const pid = Number(readFileSync(join(data, 'postmaster.pid'), 'utf8').split('\n')[0]);
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    pid,
    async stop() {
      try {
        run(join(bin, 'pg_ctl'), ['-D', data, '-m', 'fast', '-w', 'stop']);
      } catch {
        // already stopped
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * A proxy in front of `target` (a startNginx server) that answers every request `delayMs` late, as a distant site
 * would; nginx still serves and logs each request, so a crawl's completeness is checked as on the fast site.
 * Waiting costs a timer, not CPU: the crawlers' own cost is what is left to compare.
 */
export async function startSlowProxy(target, delayMs) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1024 });
  const server = http.createServer((req, res) => {
    setTimeout(() => {
      const upstream = http.request(
        { host: '127.0.0.1', port: target.port, path: req.url, method: req.method, headers: req.headers, agent },
        (up) => {
          res.writeHead(up.statusCode ?? 502, up.headers);
          up.pipe(res);
        },
      );
      upstream.on('error', () => res.destroy());
      req.pipe(upstream);
    }, delayMs);
  });
  server.keepAliveTimeout = 65_000;
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  return {
    ...target,
    url: `http://127.0.0.1:${port}`,
    port,
    async stop() {
      server.closeAllConnections();
      agent.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
