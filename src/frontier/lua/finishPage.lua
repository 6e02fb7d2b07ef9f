-- Finishing a fetched page, shared by pageDone.lua and discover.lua (prepended to both: Redis scripts cannot
-- include one another): its record appended to the task's items stream for the store, the run's counters and its
-- host's tally.
--
-- ARGV[c] the stream entry's field   ARGV[c + 1] the page record (JSON)   ARGV[c + 2] the host's tally field ('' for
-- none)   ARGV[c + 3..] counter field, increment, counter field, increment, ... (to the end of ARGV)
local function finishPage(statsKey, streamKey, hostsKey, c)
  redis.call('XADD', streamKey, '*', ARGV[c], ARGV[c + 1])
  for i = c + 3, #ARGV, 2 do
    redis.call('HINCRBY', statsKey, ARGV[i], ARGV[i + 1])
  end
  if ARGV[c + 2] ~= '' then redis.call('HINCRBY', hostsKey, ARGV[c + 2], 1) end
end
