-- A fetched page's bookkeeping in one call (finishPage.lua, prepended): its record (with its items) for the
-- store, the run's counters, its host's tally, and the end of the job's claim on its links, which are enqueued by
-- now. Atomic like the MULTI it replaces, and one command instead of eight for the worker to encode and Redis to
-- parse.
--
-- KEYS[1] stats hash of the run    KEYS[2] items stream    KEYS[3] claim hash of the job
-- KEYS[4] the run's per-host tally   KEYS[5] the job's BullMQ hash (its page is finished once)
-- ARGV[1..] the page's finish, as finishPage.lua takes it from ARGV[1]
-- Returns 1, or 0 when the job's page had been finished already.
return finishPage(KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], 1)
