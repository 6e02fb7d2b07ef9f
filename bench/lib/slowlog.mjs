// Redis time per Lua script over a run: SLOWLOG at threshold 0, drained every 250 ms (GET and RESET in one MULTI, so
// no entry is lost between them and the log stays small), EVALSHA entries summed by their script's SHA1. A script's
// duration includes the commands it calls; logging every command also adds to it, so read the shares between
// scripts, not the absolute time (only for the analysis run, never for the timed ones).
import { createRequire } from 'node:module';

const { Redis } = createRequire(import.meta.url)('ioredis');

export async function startSlowlog(port) {
  const redis = new Redis({ port, host: '127.0.0.1', lazyConnect: true });
  await redis.connect();
  const before = await redis.config('GET', 'slowlog-*');
  await redis.config('SET', 'slowlog-log-slower-than', '0', 'slowlog-max-len', '1000000');
  await redis.slowlog('RESET');
  const scripts = new Map();
  let draining = Promise.resolve();
  const drain = () =>
    (draining = draining.then(async () => {
      const [[, entries]] = await redis.multi().slowlog('GET', '-1').slowlog('RESET').exec();
      for (const [, , us, args] of entries) {
        const cmd = String(args[0]).toLowerCase();
        if (cmd !== 'evalsha' && cmd !== 'eval') continue;
        const key = cmd === 'evalsha' ? String(args[1]) : 'EVAL';
        const s = scripts.get(key) ?? { calls: 0, us: 0 };
        s.calls++;
        s.us += us;
        scripts.set(key, s);
      }
    }));
  const timer = setInterval(() => void drain().catch(() => undefined), 250);
  return {
    async stop() {
      clearInterval(timer);
      await drain().catch(() => undefined);
      const restore = [];
      for (let i = 0; i < before.length; i += 2) restore.push(before[i], before[i + 1]);
      await redis.config('SET', ...restore).catch(() => undefined);
      redis.disconnect();
      return Object.fromEntries(scripts);
    },
  };
}
