-- Fills the window from the frontier (frontier.lua, prepended): pages whose lease ran out without a job are handed
-- out again, then pages of ready hosts, best band first, up to the target. With ARGV[9] = '1' the window is first
-- reconciled (transit records of jobs finished or gone without settling).
--
-- KEYS[1] the frontier's meta   ARGV[1..8] the frontier's parameters (frontier.lua fConfig)   ARGV[9] '1' to reconcile
--
-- Returns {run, next, kind, id, band, host, record, kind, id, ...}: the current run ('' when the task has none), then
-- `next`: -3 when the window is full, else ms until a waiting host may give a page (0 now, -1 none waits), then five
-- values per page to add as a job: kind ('n' taken now, 'r' handed out again), page id, band, host, record. This
-- tail is what pageDone, settle and discover return too (with next -2: not looked at).
local c = fConfig(1)
local run = redis.call('HGET', KEYS[1], 'run')
if not run then return {'', -1} end
local out = {run, -1}
if ARGV[9] == '1' then fReconcile(c, run) end
fRecover(c, run, out)
local need = c.target - fInWindow(c)
if fTake(c, need, out) >= need then out[2] = -3 else out[2] = fNextIn(c) end
return out
