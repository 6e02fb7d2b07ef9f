-- A fetched page's bookkeeping in one call (frontier.lua and finishPage.lua, prepended): its record (with its
-- items) for the store, the run's counters, its host's tally, its job marked finished and its page out of the
-- window, which is filled again from the frontier. Atomic, so the page is counted, stored and settled together, and
-- once: a job already marked finished (fFinished) finishes nothing more.
--
-- KEYS[1] stats hash of the run    KEYS[2] items stream    KEYS[3] the run's per-host tally    KEYS[4] the frontier's meta
-- (all of the page's partition)
-- ARGV[1..8] the frontier's parameters (frontier.lua fConfig)   ARGV[9] the job id
-- ARGV[10..] the page's finish, as finishPage.lua takes it from ARGV[10]
--
-- Returns the window's fill (see fill.lua): the run, -2, then the pages to add as jobs.
local c = fConfig(1)
local run = redis.call('HGET', KEYS[4], 'run')
if not fFinished(c, ARGV[9]) then
  finishPage(KEYS[1], KEYS[2], KEYS[3], 10)
  if run then fDone(c, run, ARGV[9]) end
end
if not run then return {'', -2} end
local out = {run, -2}
fFill(c, run, out)
return out
