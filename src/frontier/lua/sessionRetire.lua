-- Retires a session (worker/sessions.ts): deletes its hash only if it is still the generation the caller used, so a
-- block seen by ten workers at once retires a session once, not its replacement nine times.
--
-- KEYS[1] the session's hash   ARGV[1] the generation (its `id`)
-- Returns 1 when this call retired it, else 0.
if redis.call('HGET', KEYS[1], 'id') == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
