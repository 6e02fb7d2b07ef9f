-- Counts a job that failed for good, once (frontier/outcomes.ts countFailed): the run's "failed" and "failed:<group>"
-- counters and its host's tally, unless the job is already counted. Written again after a connection cut (Redis may
-- have run the first call and lost its reply), a MULTI counted the page twice; a retry by hand (uncountFailed) takes
-- the job out of the set, so that how it ends next is counted.
--
-- KEYS[1] the run's stats   KEYS[2] the run's host tallies   KEYS[3] the set of the run's counted failed jobs
-- ARGV[1] the job's id   ARGV[2] the failure group   ARGV[3] the host's tally field, or ''   ARGV[4] the set's TTL (ms)
-- Returns 1 when counted now, 0 when it was already.
if redis.call('SADD', KEYS[3], ARGV[1]) == 0 then return 0 end
redis.call('PEXPIRE', KEYS[3], ARGV[4])
redis.call('HINCRBY', KEYS[1], 'failed', 1)
redis.call('HINCRBY', KEYS[1], 'failed:' .. ARGV[2], 1)
if ARGV[3] ~= '' then redis.call('HINCRBY', KEYS[2], ARGV[3], 1) end
return 1
