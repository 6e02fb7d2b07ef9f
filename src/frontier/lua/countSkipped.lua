-- Counts a job skipped for a reason, once (frontier/outcomes.ts countSkipped): the run's "skipped:<reason>", the run's
-- log of skipped pages, its host's tally and the reason's recent URLs, unless the job is already counted. Written
-- again after a connection cut (Redis may have run the first call and lost its reply), a MULTI counted it twice.
--
-- KEYS[1] the run's stats   KEYS[2] the run's skip log   KEYS[3] the run's host tallies
-- KEYS[4] the reason's recent URLs   KEYS[5] the set of the run's counted skipped jobs
-- ARGV[1] the job's id   ARGV[2] the reason's stats field   ARGV[3] the log entry (JSON)   ARGV[4] log entries kept
-- ARGV[5] the URL   ARGV[6] the host's tally field, or '' (then no tally and no recent URL)   ARGV[7] recent URLs kept
-- ARGV[8] the TTL of the log, the URLs and the set (ms)
-- Returns 1 when counted now, 0 when it was already.
if redis.call('SADD', KEYS[5], ARGV[1]) == 0 then return 0 end
redis.call('PEXPIRE', KEYS[5], ARGV[8])
redis.call('HINCRBY', KEYS[1], ARGV[2], 1)
redis.call('LPUSH', KEYS[2], ARGV[3])
redis.call('LTRIM', KEYS[2], 0, tonumber(ARGV[4]) - 1)
redis.call('PEXPIRE', KEYS[2], ARGV[8])
if ARGV[6] ~= '' then
  redis.call('HINCRBY', KEYS[3], ARGV[6], 1)
  redis.call('LPUSH', KEYS[4], ARGV[5])
  redis.call('LTRIM', KEYS[4], 0, tonumber(ARGV[7]) - 1)
  redis.call('PEXPIRE', KEYS[4], ARGV[8])
end
return 1
