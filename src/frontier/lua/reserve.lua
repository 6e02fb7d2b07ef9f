-- Reserves room under a run's page limit for a batch of links whose partitions count nothing themselves (a run
-- spread over partitions, frontier/layout.ts, counts `enqueued` in one place): up to ARGV[2] of the ARGV[1] pages
-- the run may queue. The caller queues at most that many (discover.lua's 'budget:<n>') and gives back what it did
-- not use. A caller that dies in between leaves its reservation counted: the run queues that many fewer pages.
--
-- KEYS[1] stats hash of the run (the task's own partition)   ARGV[1] max pages   ARGV[2] wanted
-- Returns the number reserved.
local left = tonumber(ARGV[1]) - tonumber(redis.call('HGET', KEYS[1], 'enqueued') or '0')
local n = math.max(0, math.min(tonumber(ARGV[2]), left))
if n > 0 then redis.call('HINCRBY', KEYS[1], 'enqueued', n) end
return n
