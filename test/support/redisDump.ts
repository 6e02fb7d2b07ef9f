import { Redis } from 'ioredis';

// For tests that a secret never reaches Redis: every value of every key, as text.

/** Every value under the task's keys, as text: hashes field by field, strings, lists and streams whole. */
export async function redisDump(url: string): Promise<string> {
  const r = new Redis(url);
  const parts: string[] = [];
  for (const key of await r.keys('*')) {
    const type = await r.type(key);
    if (type === 'hash') parts.push(key, JSON.stringify(await r.hgetall(key)));
    else if (type === 'string') parts.push(key, (await r.getBuffer(key))?.toString('latin1') ?? '');
    else if (type === 'list') parts.push(key, JSON.stringify(await r.lrange(key, 0, -1)));
    else if (type === 'stream') parts.push(key, JSON.stringify(await r.xrange(key, '-', '+')));
    else if (type === 'zset') parts.push(key, JSON.stringify(await r.zrange(key, 0, -1)));
    else if (type === 'set') parts.push(key, JSON.stringify(await r.smembers(key)));
  }
  r.disconnect();
  return parts.join('\n');
}
