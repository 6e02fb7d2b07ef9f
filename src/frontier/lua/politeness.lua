-- Per-host politeness shared by every worker on every machine: at most `concurrency` requests in flight to the
-- host, and at least `delay` ms between two request starts. Time is Redis's own, so clocks of different machines
-- do not matter.
--
-- With a delay, a page that cannot start now is promised the host's next free start (Mercator's per-host
-- schedule): the caller sets it aside (BullMQ's delayed set) until then and takes a page of another host, instead
-- of holding a worker's job while it waits. A broad crawl then keeps every host busy at its rate; before, a
-- worker's jobs queued at a few hosts' gates while hundreds of hosts sat idle (issue 19: 3.4 of 200 pages/s).
-- Promises are kept in order: a page that comes back at its time starts (if the last start is `delay` behind);
-- one that comes back late still goes before pages that hold no promise.
--
-- The delay holds between requests as they are sent, not only as they are granted: a grant with a delay marks the
-- host as sending (KEYS[5], the grantee's token) until its worker says the request is on the wire (sent.lua, which
-- moves the next start to that moment + delay), and no other grant is made meanwhile. Spaced by grant alone, a
-- request that left late (a worker's busy event loop, a wait for a fetch slot) went out under 100 ms before the
-- next of a host with a 200 ms delay (issue 35). The mark expires with the lease, should its worker die.
--
-- KEYS[1] host next-start key (last start + delay)   KEYS[2] host in-flight lease set
-- KEYS[3] host horizon key (the earliest start not promised to anyone)   KEYS[4] host promises (id -> start)
-- KEYS[5] host sending key ("<token>|<delay>" of a grant whose request is not sent yet)
-- ARGV[1] delay ms   ARGV[2] concurrency   ARGV[3] lease token   ARGV[4] lease ms   ARGV[5] promise id (task|job)
--
-- Returns {1, 0} when the caller may fetch now (and holds a lease until it releases it or it expires), or
-- {0, wait} with when to try again in ms: a promise when there is a delay, a hint when the host is at its
-- concurrency.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local delay = tonumber(ARGV[1])
local concurrency = tonumber(ARGV[2])
local lease = tonumber(ARGV[4])
local id = ARGV[5]
-- A page gone for good (removed, its run cancelled) leaves a promise behind: it costs the host one slot, and is
-- forgotten after ten minutes.
local FORGET_MS = 600000

redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
if redis.call('ZCARD', KEYS[2]) >= concurrency then
  return {0, 20}
end
if delay > 0 then
  if redis.call('EXISTS', KEYS[5]) == 1 then
    return {0, 5}
  end
  local nextStart = tonumber(redis.call('GET', KEYS[1]) or '0')
  redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', now - FORGET_MS)
  local promised = id ~= '' and redis.call('ZSCORE', KEYS[4], id)
  if promised then
    promised = tonumber(promised)
    if now < promised then
      return {0, promised - now}
    end
    if now < nextStart then
      return {0, nextStart - now}
    end
    redis.call('ZREM', KEYS[4], id)
  else
    local horizon = math.max(tonumber(redis.call('GET', KEYS[3]) or '0'), nextStart)
    if now < horizon then
      if id == '' then
        return {0, horizon - now}
      end
      redis.call('SET', KEYS[3], horizon + delay, 'PX', horizon + delay - now + FORGET_MS)
      redis.call('ZADD', KEYS[4], horizon, id)
      redis.call('PEXPIRE', KEYS[4], horizon - now + FORGET_MS)
      return {0, horizon - now}
    end
  end
  redis.call('SET', KEYS[1], now + delay, 'PX', delay + 1000)
  -- The mark holds the delay too: a worker killed between writing its request and saying so (sent.lua) must still
  -- space the host's next start from its release (politeness.ts releaseAll), not from this grant.
  redis.call('SET', KEYS[5], ARGV[3] .. '|' .. delay, 'PX', lease)
  local horizon = tonumber(redis.call('GET', KEYS[3]) or '0')
  if horizon < now + delay then
    redis.call('SET', KEYS[3], now + delay, 'PX', delay + FORGET_MS)
  end
end
redis.call('ZADD', KEYS[2], now + lease, ARGV[3])
redis.call('PEXPIRE', KEYS[2], lease + 1000)
return {1, 0}
