-- Gives back the active jobs of a worker that is known to be dead (its supervisor saw it exit), so that they run
-- again at once rather than when their locks expire (lockDuration, 30 s by default, plus up to a stalled
-- interval). BullMQ itself still moves them: each lock is deleted and its job marked as a stall candidate, and
-- the next stalled-jobs check (made due now) moves the job back to wait and counts the stall, so a page that
-- keeps killing its workers is still failed after maxStalledCount stalls.
--
-- KEYS[1] BullMQ active list   KEYS[2] BullMQ stalled set   KEYS[3] BullMQ stalled-check key
-- ARGV[1] prefix of a job's key (a job's lock is <prefix><id>:lock)
-- ARGV[2] the dead BullMQ worker's lock-token prefix ("<worker id>:")
-- Returns the ids of the jobs released.
local active = redis.call('LRANGE', KEYS[1], 0, -1)
local owner = ARGV[2]
local released = {}
for _, id in ipairs(active) do
  local lock = ARGV[1] .. id .. ':lock'
  local token = redis.call('GET', lock)
  if token and string.sub(token, 1, #owner) == owner then
    redis.call('DEL', lock)
    redis.call('SADD', KEYS[2], id)
    released[#released + 1] = id
  end
end
if #released > 0 then redis.call('DEL', KEYS[3]) end
return released
