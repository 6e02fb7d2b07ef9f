import { Redis } from 'ioredis';
import { createHash } from 'node:crypto';
import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { withScripts } from '../../src/frontier/scripts';

// The name of every Lua script a crawl runs, by its SHA1, so the profile run can say which script Redis spent its
// time in (SLOWLOG and MONITOR name a script only by the SHA1 its EVALSHA sends). The engine's scripts are defined
// the way the worker defines them (frontier/scripts.ts, on a connection that never connects); BullMQ's come from
// its own script modules, whose text its Queue and Worker define. Prints { result: { shas: { sha: name } } }.

const shas: Record<string, string> = {};
const redis = new Redis({ lazyConnect: true });
withScripts(redis);
const defined = (redis as unknown as { scriptsSet: Record<string, { sha: string }> }).scriptsSet;
for (const [name, script] of Object.entries(defined)) shas[script.sha] = name;
redis.disconnect();

// From the build's folder, or from the working directory (bench/run.mjs runs this in the repository): a build made
// elsewhere (build.mjs --out DIR) has no node_modules above it.
const scripts = join(dirname(require.resolve('bullmq', { paths: [__dirname, process.cwd()] })), 'scripts');
for (const file of readdirSync(scripts).filter((f) => f.endsWith('.js') && f !== 'index.js')) {
  const mod = require(join(scripts, file)) as Record<string, { name?: string; content?: string }>;
  for (const s of Object.values(mod)) {
    if (!s?.content || !s.name) continue;
    shas[createHash('sha1').update(s.content).digest('hex')] = `BullMQ ${s.name}`;
  }
}
console.log(JSON.stringify({ result: { shas } }));
