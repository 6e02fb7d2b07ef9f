-- A task's global rate limit, as a sliding window: at most `max` request starts in any `per` ms, across every
-- worker. (BullMQ's limiter counts fixed windows, which lets up to twice the limit through around a window
-- boundary.) Time is Redis's own.
--
-- KEYS[1] sorted set of recent starts   ARGV[1] max   ARGV[2] per ms   ARGV[3] unique token
-- Returns 0 when the caller may start now, else the ms to wait.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local max = tonumber(ARGV[1])
local per = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - per)
if redis.call('ZCARD', KEYS[1]) < max then
  redis.call('ZADD', KEYS[1], now, ARGV[3])
  redis.call('PEXPIRE', KEYS[1], per + 1000)
  return 0
end
local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
return math.max(1, tonumber(oldest[2]) + per - now)
