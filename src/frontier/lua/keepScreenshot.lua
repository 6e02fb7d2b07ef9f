-- Keeps a screenshot of a rendered page (frontier/screenshots.ts): its facts and its JPEG in the run's hash, its URL
-- in the run's order, the oldest dropped past the cap, and both keys' lives renewed, in one call.
--
-- KEYS[1] the run's screenshots hash   KEYS[2] their order (sorted set, by time)
-- ARGV[1] the page's URL   ARGV[2] its facts (JSON)   ARGV[3] the JPEG   ARGV[4] when (ms)   ARGV[5] how many a run
-- keeps   ARGV[6] their life (ms)
-- Returns 1.
redis.call('HSET', KEYS[1], 'm:' .. ARGV[1], ARGV[2], 'j:' .. ARGV[1], ARGV[3])
redis.call('ZADD', KEYS[2], ARGV[4], ARGV[1])
local over = redis.call('ZCARD', KEYS[2]) - tonumber(ARGV[5])
if over > 0 then
  for _, url in ipairs(redis.call('ZRANGE', KEYS[2], 0, over - 1)) do
    redis.call('HDEL', KEYS[1], 'm:' .. url, 'j:' .. url)
  end
  redis.call('ZREMRANGEBYRANK', KEYS[2], 0, over - 1)
end
redis.call('PEXPIRE', KEYS[1], ARGV[6])
redis.call('PEXPIRE', KEYS[2], ARGV[6])
return 1
