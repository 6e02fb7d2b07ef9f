import assert from 'node:assert/strict';
import { evictionRisk } from '../../src/redis/memory';

// When a Redis's eviction policy can lose a crawl's keys, and what the crawl is told (memory.ts evictionRisk).

describe('an evicting Redis, as a crawl is told', () => {
  const at = 'redis://cache:6379';
  const mb = 1024 * 1024;

  it('says nothing of noeviction, or of a Redis without a memory limit (it never evicts)', () => {
    assert.equal(evictionRisk(at, { used: mb, max: 100 * mb, policy: 'noeviction' }), null);
    assert.equal(evictionRisk(at, { used: mb, max: 0, policy: 'allkeys-lru' }), null);
  });

  it('names the policy, the limit and what goes: any key, or the keys that expire', () => {
    assert.equal(
      evictionRisk(at, { used: 3 * mb, max: 100 * mb, policy: 'allkeys-lfu' }),
      "redis://cache:6379 has maxmemory-policy allkeys-lfu: once it holds maxmemory (100.0 MB, 3.0 MB used now) it deletes any key (a crawl's queue, its seen links, its counters: pages are lost or fetched twice), without a word. Set maxmemory-policy noeviction (redis-cli CONFIG SET maxmemory-policy noeviction, or a managed Redis's parameter group): a full Redis then refuses writes and the run stops saying so, resumable.",
    );
    assert.match(
      evictionRisk(at, { used: 0, max: mb, policy: 'volatile-ttl' })!,
      /maxmemory-policy volatile-ttl: .* it deletes keys that expire \(a page's lock, a run's lease/,
    );
  });
});
