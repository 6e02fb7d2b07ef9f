-- A granted request is on the wire (politeness.lua): the host's next start moves to now + delay, and the host is no
-- longer marked as sending, so the next grant may come once that start is reached. Moving the start on is always
-- safe, so a late call (its mark gone with the lease, or taken over) still counts the send.
--
-- KEYS[1] host next-start key   KEYS[2] host horizon key   KEYS[3] host sending key ("<token>|<delay>")
-- ARGV[1] delay ms   ARGV[2] the grant's lease token
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local delay = tonumber(ARGV[1])
local mark = redis.call('GET', KEYS[3])
if mark and string.sub(mark, 1, #ARGV[2] + 1) == ARGV[2] .. '|' then
  redis.call('DEL', KEYS[3])
end
if tonumber(redis.call('GET', KEYS[1]) or '0') < now + delay then
  redis.call('SET', KEYS[1], now + delay, 'PX', delay + 1000)
end
if tonumber(redis.call('GET', KEYS[2]) or '0') < now + delay then
  redis.call('SET', KEYS[2], now + delay, 'PX', delay + 600000)
end
return 1
