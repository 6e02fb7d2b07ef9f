-- Per-host politeness shared by every worker on every machine: at most `concurrency` requests in flight to the
-- host, and at least `delay` ms between two request starts. Time is Redis's own, so clocks of different machines
-- do not matter.
--
-- KEYS[1] host next-start key   KEYS[2] host in-flight lease set
-- ARGV[1] delay ms   ARGV[2] concurrency   ARGV[3] lease token   ARGV[4] lease ms
--
-- Returns {1, 0} when the caller may fetch now (and holds a lease until it releases it or it expires), or
-- {0, wait} with a hint in ms of when to try again.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local delay = tonumber(ARGV[1])
local concurrency = tonumber(ARGV[2])
local lease = tonumber(ARGV[4])

redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
if redis.call('ZCARD', KEYS[2]) >= concurrency then
  return {0, 20}
end
if delay > 0 then
  local nextStart = tonumber(redis.call('GET', KEYS[1]) or '0')
  if now < nextStart then
    return {0, nextStart - now}
  end
  redis.call('SET', KEYS[1], now + delay, 'PX', delay + 1000)
end
redis.call('ZADD', KEYS[2], now + lease, ARGV[3])
redis.call('PEXPIRE', KEYS[2], lease + 1000)
return {1, 0}
