-- Decides, atomically, that a run has drained and who finalizes it (frontier.lua, prepended), for a task in one
-- partition (frontier/layout.ts; drainPart.lua and drainFinal.lua do it for several). A run has drained when it is
-- marked running and has no work left (fPending: BullMQ's live states, the frontier, the window). The first caller
-- to see that wins the finalize flag (SET NX) and gets 1; everybody else gets 0 (not drained) or -1 (already
-- finalized).
--
-- The flag expires unless its winner keeps it (session.ts, FINALIZE_HOLD_MS, refreshes it while it finalizes, and
-- deletes it when its finalize fails or is stopped). A finalizer that dies or hangs mid-finalize (a store that
-- stopped answering, SIGKILL) used to leave the flag forever: every later session of the run was told "another
-- process finalized this run" while the run stayed 'running' and its items stayed in the stream. A flag without a
-- TTL is such a leftover (of a version that never expired it) and is taken over.
--
-- KEYS[1] meta hash   KEYS[2] finalized flag   KEYS[3..8] wait, active, paused, delayed, prioritized, waiting-children
-- ARGV[1] run id   ARGV[2] how long the flag holds without a refresh, ms   ARGV[3..10] the frontier's parameters
if redis.call('HGET', KEYS[1], 'run') ~= ARGV[1] or redis.call('HGET', KEYS[1], 'state') ~= 'running' then
  return 0
end
local hold = tonumber(ARGV[2]) or 15000
if redis.call('EXISTS', KEYS[2]) == 1 and redis.call('PTTL', KEYS[2]) ~= -1 then return -1 end
local c = fConfig(3)
if fPending(c, ARGV[1], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8]) > 0 then return 0 end
redis.call('SET', KEYS[2], '1', 'PX', hold)
return 1
