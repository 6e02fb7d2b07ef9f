-- A page of the window ends without pageDone: skipped (robots.txt, a rule gone) or failed for good. It leaves the
-- window (frontier.lua, prepended), which is filled again.
--
-- KEYS[1] the frontier's meta (of the job's partition)   ARGV[1..8] the frontier's parameters (frontier.lua fConfig)   ARGV[9] the job id
-- Returns the window's fill (see fill.lua): the run, -2, then the pages to add as jobs.
local c = fConfig(1)
local run = redis.call('HGET', KEYS[1], 'run')
if not run then return {'', -2} end
local p = run .. '.'
if string.sub(ARGV[9], 1, #p) == p then fSettle(c, string.sub(ARGV[9], #p + 1)) end
local out = {run, -2}
fFill(c, run, out)
return out
