-- Drops the pages waiting in one priority band of the frontier (lua/frontier.lua documents its keys), the lists of
-- at most ARGV[3] hosts per call: the Queue Explorer's Drain. The counters move with the lists in the same call, so
-- pages pushed or taken meanwhile by a running crawl keep them true; the run marker (discover refuses links without
-- it), the window (its pages settle as their jobs end) and the hosts' schedules stay.
--
-- KEYS[1] the frontier's meta   ARGV[1] the frontier's key prefix F   ARGV[2] the band   ARGV[3] most hosts
-- ARGV[4] '1' to count the change (`v`: a task spread over partitions)
-- Returns {pages dropped, hosts left in the band}.
local F, band = ARGV[1], ARGV[2]
local rz = F .. 'ready:' .. band
local dropped = 0
for _, host in ipairs(redis.call('ZRANGE', rz, 0, tonumber(ARGV[3]) - 1)) do
  local q = F .. 'q:' .. band .. ':' .. host
  dropped = dropped + redis.call('LLEN', q)
  redis.call('UNLINK', q)
  redis.call('ZREM', rz, host)
end
local left = redis.call('ZCARD', rz)
-- A host's list holds pages exactly while the host is in its band's ready set (fPush, fTake).
if left == 0 then
  redis.call('HDEL', KEYS[1], 'b:' .. band)
  redis.call('ZREM', F .. 'bands', band)
elseif dropped > 0 then
  redis.call('HINCRBY', KEYS[1], 'b:' .. band, -dropped)
end
if dropped > 0 then
  redis.call('HINCRBY', KEYS[1], 'n', -dropped)
  if ARGV[4] == '1' then redis.call('HINCRBY', KEYS[1], 'v', 1) end
end
return {dropped, left}
