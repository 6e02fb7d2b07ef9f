-- Sets fields of a session (worker/sessions.ts: its cookies, one field each, and its login state) only if it is
-- still the generation the caller used, so a late response cannot put a retired session's cookies into the new one.
--
-- KEYS[1] the session's hash   ARGV[1] the generation (its `id`)   ARGV[2..] field, value pairs ('' deletes)
-- Returns 1 when set, 0 when the session was retired meanwhile.
if redis.call('HGET', KEYS[1], 'id') ~= ARGV[1] then return 0 end
for i = 2, #ARGV, 2 do
  if ARGV[i + 1] == '' then redis.call('HDEL', KEYS[1], ARGV[i]) else redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]) end
end
return 1
