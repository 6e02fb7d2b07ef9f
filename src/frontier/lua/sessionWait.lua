-- A session waits out a host's Retry-After (worker/sessions.ts): a wait only ever grows, and only in the generation
-- that was told to wait.
--
-- KEYS[1] the session's hash   ARGV[1] the generation (its `id`)   ARGV[2] the host's wait field   ARGV[3] until (ms)
-- Returns 1 when set (or a longer wait was there), 0 when the session was retired meanwhile.
if redis.call('HGET', KEYS[1], 'id') ~= ARGV[1] then return 0 end
local v = redis.call('HGET', KEYS[1], ARGV[2])
if not v or tonumber(v) < tonumber(ARGV[3]) then redis.call('HSET', KEYS[1], ARGV[2], ARGV[3]) end
return 1
