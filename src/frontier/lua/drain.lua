-- Decides, atomically, that a run has drained and who finalizes it (frontier.lua, prepended). A run has drained
-- when it is marked running, BullMQ holds no job in any state that can still produce work, no page waits in the
-- frontier, and no page is in the window on its way to BullMQ. The first caller to see that wins the finalize flag
-- (SET NX) and gets 1; everybody else gets 0 (not drained) or -1 (already finalized).
--
-- The flag expires unless its winner keeps it (session.ts, FINALIZE_HOLD_MS, refreshes it while it finalizes, and
-- deletes it when its finalize fails or is stopped). A finalizer that dies or hangs mid-finalize (a store that
-- stopped answering, SIGKILL) used to leave the flag forever: every later session of the run was told "another
-- process finalized this run" while the run stayed 'running' and its items stayed in the stream. A flag without a
-- TTL is such a leftover (of a version that never expired it) and is taken over.
--
-- KEYS[1] meta hash   KEYS[2] finalized flag   KEYS[3..8] wait, active, paused, delayed, prioritized, waiting-children
-- ARGV[1] run id   ARGV[2] how long the flag holds without a refresh, ms   ARGV[3..8] the frontier's parameters
if redis.call('HGET', KEYS[1], 'run') ~= ARGV[1] or redis.call('HGET', KEYS[1], 'state') ~= 'running' then
  return 0
end
local hold = tonumber(ARGV[2]) or 15000
if redis.call('EXISTS', KEYS[2]) == 1 and redis.call('PTTL', KEYS[2]) ~= -1 then return -1 end
-- A recurring task's next occurrence waits in "delayed" as a job scheduler job ("repeat:..."): it is not work of
-- this run. Only a short delayed set is inspected; a long one holds page jobs anyway.
local delayed = redis.call('ZCARD', KEYS[6])
if delayed > 0 and delayed <= 16 then
  for _, id in ipairs(redis.call('ZRANGE', KEYS[6], 0, -1)) do
    if string.sub(id, 1, 7) == 'repeat:' then delayed = delayed - 1 end
  end
end
local pending = redis.call('LLEN', KEYS[3]) + redis.call('LLEN', KEYS[4]) + redis.call('LLEN', KEYS[5])
  + delayed + redis.call('ZCARD', KEYS[7]) + redis.call('ZCARD', KEYS[8])
if pending > 0 then return 0 end
local c = fConfig(3)
if tonumber(redis.call('HGET', c.F .. 'meta', 'n') or '0') > 0 then return 0 end
-- With no job left that can run, a page still in the window either is on its way into BullMQ (no job yet, its lease
-- running: wait for it, or for its lease to run out and a fill to hand it out again) or ended without settling (its
-- job finished or removed: settle it now).
for _, id in ipairs(redis.call('HKEYS', c.F .. 'transit')) do
  local jk = c.J .. ARGV[1] .. '.' .. id
  if redis.call('EXISTS', jk) == 1 then
    if redis.call('HEXISTS', jk, 'finishedOn') == 1 then fSettle(c, id) else pending = pending + 1 end
  elseif redis.call('ZSCORE', c.F .. 'lease', id) then
    pending = pending + 1
  else
    fSettle(c, id)
  end
end
if pending > 0 then return 0 end
redis.call('SET', KEYS[2], '1', 'PX', hold)
return 1
