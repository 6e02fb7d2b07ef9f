-- A fetched page's bookkeeping in one call: its record (with its items) appended to the task's items stream for
-- the store, the run's counters, its host's tally, and the end of the job's claim on its links, which are
-- enqueued by now. Atomic like the MULTI it replaces, and one command instead of eight for the worker to encode
-- and Redis to parse.
--
-- KEYS[1] stats hash of the run    KEYS[2] items stream    KEYS[3] claim hash of the job
-- KEYS[4] the run's per-host tally
-- ARGV[1] the stream entry's field  ARGV[2] the page record (JSON)  ARGV[3] the host's tally field ('' for none)
-- ARGV[4..] counter field, increment, counter field, increment, ...
redis.call('XADD', KEYS[2], '*', ARGV[1], ARGV[2])
for i = 4, #ARGV, 2 do
  redis.call('HINCRBY', KEYS[1], ARGV[i], ARGV[i + 1])
end
if ARGV[3] ~= '' then redis.call('HINCRBY', KEYS[4], ARGV[3], 1) end
redis.call('UNLINK', KEYS[3])
return 1
