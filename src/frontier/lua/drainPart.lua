-- Work left in one partition of a run spread over several (frontier/layout.ts): drain.lua's check for one slot,
-- with the partition's change counter. frontier/crawl.ts tryFinalize reads every partition's counter, checks each,
-- and reads the counters again: a page queued into a partition checked earlier (by a page of one checked later)
-- changes its counter, so the run is never taken for drained while such a page waits.
--
-- KEYS[1..6] wait, active, paused, delayed, prioritized, waiting-children of the partition's queue
-- ARGV[1] run id   ARGV[2..9] the frontier's parameters
-- Returns {work left, the frontier's change counter}.
local c = fConfig(2)
local pending = fPending(c, ARGV[1], KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6])
return {pending, tonumber(redis.call('HGET', c.F .. 'meta', 'v') or '0')}
