-- Finishing a fetched page, shared by pageDone.lua and discover.lua (prepended to both: Redis scripts cannot
-- include one another): its record appended to the task's items stream for the store, the run's counters, its
-- host's tally, and the end of the job's claim on its links.
--
-- A page is finished once per job: a job that runs again after its page was finished (its lock lost while Redis was
-- away, its worker killed between this call and BullMQ's completion) finds the mark on its BullMQ hash and
-- counts nothing (issue 23, item 4: "Pages done 75" of "Discovered 60" after an outage). The mark lives and goes
-- with the job's hash, so it costs no key; a job id with no hash (none in the queue) is not marked.
--
-- jobKey the BullMQ hash of the job   ARGV[c] the stream entry's field   ARGV[c + 1] the page record (JSON)
-- ARGV[c + 2] the host's tally field ('' for none)   ARGV[c + 3..] counter field, increment, ...
-- Returns 1 when the page was finished now, 0 when it had been already.
local function finishPage(statsKey, streamKey, claimKey, hostsKey, jobKey, c)
  if redis.call('EXISTS', jobKey) == 1 and redis.call('HSETNX', jobKey, 'csFinished', 1) == 0 then
    redis.call('UNLINK', claimKey)
    return 0
  end
  redis.call('XADD', streamKey, '*', ARGV[c], ARGV[c + 1])
  for i = c + 3, #ARGV, 2 do
    redis.call('HINCRBY', statsKey, ARGV[i], ARGV[i + 1])
  end
  if ARGV[c + 2] ~= '' then redis.call('HINCRBY', hostsKey, ARGV[c + 2], 1) end
  redis.call('UNLINK', claimKey)
  return 1
end
