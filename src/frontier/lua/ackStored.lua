-- Acknowledges and deletes stream entries whose rows the store writer has committed (store/streamWriter.ts), both in
-- one call. Sent as two commands, a connection cut between them (a failover, a dropped link) left entries
-- acknowledged and still in the stream: never read again, yet counted in the backlog, so a run's flush waited on
-- them for ever. XACK and XDEL are allowed when Redis is over its maxmemory, in a script as alone (a MULTI is not):
-- they are what frees its memory. Run twice (a reply lost and the call sent again), the second call changes nothing.
--
-- KEYS[1] the stream   ARGV[1] the consumer group   ARGV[2..] the entries' ids
-- Returns how many entries were still pending.
local ids = {}
for i = 2, #ARGV do ids[#ids + 1] = ARGV[i] end
local acked = redis.call('XACK', KEYS[1], ARGV[1], unpack(ids))
redis.call('XDEL', KEYS[1], unpack(ids))
return acked
