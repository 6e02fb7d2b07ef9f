// Conditional re-crawl, measured on the bench's fixture site (nginx, ETag + Last-Modified on every page): a run with
// request.conditional off, the first run with it on (recording), a second run (304s), and a run after Redis was
// emptied (records restored from the SQLite store).
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startNginx, startRedis, redisInfo } from './lib/services.mjs';
import { benchTask } from './lib/task.mjs';
// Run after `node bench/build.mjs` (it measures bench/.build); `node bench/recrawl.mjs`, numbers as JSON lines.
const build = join(dirname(fileURLToPath(import.meta.url)), '.build');
const tmp = '/dev/shm/recrawl-measure';
rmSync(tmp, { recursive: true, force: true });
mkdirSync(tmp, { recursive: true });
const site = join(tmp, 'site');
execFileSync(
  process.execPath,
  [join(build, 'sitegen.js'), '--out', site, '--list', '100', '--per', '20', '--filler', '22'],
  { stdio: 'inherit' },
);
const nginx = await startNginx({ root: site, dir: join(tmp, 'nginx') });
const run = (dir, redis, conditional) => {
  mkdirSync(dir, { recursive: true });
  const task = join(dir, 'bench.crawl.yaml');
  writeFileSync(
    task,
    benchTask({ base: nginx.url, concurrency: 16 }).replace('request:\n', `request:\n  conditional: ${conditional}\n`),
  );
  const t0 = Date.now();
  const r = spawnSync(
    process.execPath,
    [join(build, 'cli.js'), 'run', task, '--workers', '1', '--concurrency', '16', '--redis', redis.url],
    { encoding: 'utf8' },
  );
  const ms = Date.now() - t0;
  const out = r.stdout + r.stderr;
  const pages = Number(/pages fetched\s+([\d,]+)/.exec(out)?.[1]?.replace(/,/g, '') ?? 0);
  return {
    ms,
    pages,
    pps: Math.round((pages * 1000) / ms),
    line: /pages fetched.*/.exec(out)?.[0],
    restored: /.*restored.*/.exec(out)?.[0] ?? '',
    store: statSync(join(dir, '.crawl', 'bench.sqlite')).size,
  };
};
const results = [];
for (let round = 0; round < 2; round++) {
  const off = await startRedis({ dir: join(tmp, `r-off-${round}`) });
  results.push(['off', round, run(join(tmp, `off-${round}`), off, false)]);
  await off.stop?.();
  const on = await startRedis({ dir: join(tmp, `r-on-${round}`) });
  const dir = join(tmp, `on-${round}`);
  results.push(['on, 1st run (recording)', round, run(dir, on, true)]);
  const info = await redisInfo(on.port);
  const mem = execFileSync('redis-cli', ['-p', String(on.port), 'MEMORY', 'USAGE', 'cs:{bench}:#revisits'], {
    encoding: 'utf8',
  }).trim();
  const hlen = execFileSync('redis-cli', ['-p', String(on.port), 'HLEN', 'cs:{bench}:#revisits'], {
    encoding: 'utf8',
  }).trim();
  results.push([
    '  revisits hash',
    round,
    {
      bytes: Number(mem),
      records: Number(hlen),
      perRecord: Math.round(Number(mem) / Number(hlen)),
      usedMemory: info.used_memory,
    },
  ]);
  results.push(['on, 2nd run (304s)', round, run(dir, on, true)]);
  execFileSync('redis-cli', ['-p', String(on.port), 'FLUSHALL']);
  results.push(['on, emptied Redis (restore)', round, run(dir, on, true)]);
  await on.stop?.();
}
for (const r of results) console.log(JSON.stringify(r));
await nginx.stop?.();
rmSync(tmp, { recursive: true, force: true });
process.exit(0);
