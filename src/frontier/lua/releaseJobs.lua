-- Gives back the active jobs of a worker that is known to be dead (its supervisor saw it exit), so that they run
-- again within a stalled-jobs check rather than once their locks expire (lockDuration, 30 s by default). BullMQ
-- itself still moves them: each lock is deleted and its job marked as a stall candidate, and the next check moves
-- the job back to wait and counts the stall, so a page that keeps killing its workers still fails after
-- maxStalledCount stalls.
--
-- The check is not made due at once, on purpose: the dead worker's replacement, booting with all its job slots
-- free, would take the released jobs all together, and a page that crashes its worker would take the same
-- companions down with it at every crash until they failed too. At the next regular check the fleet's workers are
-- busy and take them one by one as they finish jobs, so they scatter.
--
-- KEYS[1] BullMQ active list   KEYS[2] BullMQ stalled set
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
return released
