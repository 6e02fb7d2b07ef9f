-- Takes a session of a task's pool for one page (worker/sessions.ts) in one call: the first slot, from a random one
-- on, that is not waiting out a Retry-After from the page's host (a field `w:<host>`: until when, in ms) is begun
-- (HSETNX id) and counted, so a session over maxPages is seen by exactly the page that crossed it. When every slot
-- waits, the soonest end of a wait comes back instead. A session belongs to a run (field `run`): the first page of a
-- new run finds the last run's sessions and starts them afresh, so a new run logs in with the credentials it has
-- now, not with what an earlier run's login left.
--
-- KEYS the slots' hashes, in the order to try them
-- ARGV[1] a new session id   ARGV[2] now (ms)   ARGV[3] the host's wait field   ARGV[4] the run ('' for any)
-- Returns {index into KEYS, session id, pages, login state}, or {-1, soonest end of a wait}.
local now = tonumber(ARGV[2])
local soonest = nil
for i, key in ipairs(KEYS) do
  if ARGV[4] ~= '' and redis.call('HGET', key, 'run') ~= ARGV[4] then
    redis.call('DEL', key)
    redis.call('HSET', key, 'run', ARGV[4])
  end
  local v = redis.call('HGET', key, ARGV[3])
  local till = v and tonumber(v) or 0
  if till > now then
    if soonest == nil or till < soonest then soonest = till end
  else
    redis.call('HSETNX', key, 'id', ARGV[1])
    local pages = redis.call('HINCRBY', key, 'pages', 1)
    return {i - 1, redis.call('HGET', key, 'id'), pages, redis.call('HGET', key, 'login') or ''}
  end
end
return {-1, soonest}
