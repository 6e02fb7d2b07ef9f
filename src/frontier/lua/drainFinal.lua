-- The last step of drain detection for a run spread over partitions (see drainPart.lua): the run is still the
-- task's and running, and nobody holds the finalize flag; then this caller takes it. Returns 1 (won), 0 (not
-- running any more), -1 (already finalized). drain.lua explains the flag's expiry.
--
-- KEYS[1] meta hash   KEYS[2] finalized flag   ARGV[1] run id   ARGV[2] how long the flag holds without a refresh, ms
if redis.call('HGET', KEYS[1], 'run') ~= ARGV[1] or redis.call('HGET', KEYS[1], 'state') ~= 'running' then
  return 0
end
if redis.call('EXISTS', KEYS[2]) == 1 and redis.call('PTTL', KEYS[2]) ~= -1 then return -1 end
redis.call('SET', KEYS[2], '1', 'PX', tonumber(ARGV[2]))
return 1
