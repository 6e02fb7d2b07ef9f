-- Marks discovered URLs as seen and queues the new ones in the frontier, in one atomic call (frontier.lua and
-- finishPage.lua, prepended): a URL found by many workers at once is queued once, and a URL marked seen is always
-- queued too (there is no moment between the two for a dead worker to lose it). Fingerprints live in bucketed Redis
-- sets of 63-bit integers (intset encoding: ~8 bytes a URL).
--
-- KEYS[1] stats hash of the run   KEYS[2] the frontier's meta (its `run`)   KEYS[3..2+m] seen bucket of each URL
-- (all of one partition: frontier/layout.ts)
-- KEYS[3+m], KEYS[4+m] the items stream and the run's per-host tally (finishing only)
-- ARGV[1..8] the frontier's parameters (frontier.lua fConfig)   ARGV[9] the page limit: '0' none; 'max:<n>' at most n
--   URLs queued in the run, counted here; 'budget:<n>' at most n more URLs, already counted where the caller reserved
--   them (a run spread over partitions counts its limit in one place)   ARGV[10] run id
-- ARGV[11] m, the number of URLs   ARGV[12] 'force' to queue URLs seen before (enqueue --force; no page limit), or ''
-- ARGV[13..12+4m] four per URL: fingerprint member, host, band, frontier record (frontier/record.ts)
-- ARGV[13+4m] optional, to finish the discovering page in the same call: its job id, then from ARGV[14+4m] the
--   page's finish, as finishPage.lua takes it
--
-- Returns one code per URL: 1 queued, 0 already seen, 2 over the page limit; then the window's fill (fill.lua's
-- tail: the run, -2, the pages to add as jobs). An error when the run is not the task's current run (Redis lost its
-- data, or a new run replaced it): links of a run nobody watches any more would otherwise re-seed an empty dedup set
-- and re-crawl the site unseen.
local c = fConfig(1)
local run = ARGV[10]
if redis.call('HGET', KEYS[2], 'run') ~= run then
  return redis.error_reply('RUNGONE run ' .. run .. ' is not the current run of this task')
end
local limit, bound = string.match(ARGV[9], '^(%a+):(%d+)$')
local maxPages = 0
local budget = -1
if limit == 'max' then maxPages = tonumber(bound) elseif limit == 'budget' then budget = tonumber(bound) end
local m = tonumber(ARGV[11])
local force = ARGV[12] == 'force'
local out = {}
local dup, fresh, limited = 0, 0, 0
for k = 1, m do
  local a = 9 + 4 * k
  if redis.call('SADD', KEYS[2 + k], ARGV[a]) == 1 or force then
    if (maxPages > 0 and not force and redis.call('HINCRBY', KEYS[1], 'enqueued', 1) > maxPages) or (budget >= 0 and not force and fresh >= budget) then
      if budget < 0 then redis.call('HINCRBY', KEYS[1], 'enqueued', -1) end
      limited = limited + 1
      out[k] = 2
    else
      fPush(c, ARGV[a + 1], ARGV[a + 2], ARGV[a + 3])
      fresh = fresh + 1
      out[k] = 1
    end
  else
    dup = dup + 1
    out[k] = 0
  end
end
fPushed(c)
if fresh > 0 and ((maxPages == 0 and budget < 0) or force) then redis.call('HINCRBY', KEYS[1], 'enqueued', fresh) end
if dup > 0 then redis.call('HINCRBY', KEYS[1], 'duplicates', dup) end
if limited > 0 then redis.call('HINCRBY', KEYS[1], 'skipped:limit', limited) end
if #ARGV > 12 + 4 * m and not fFinished(c, ARGV[13 + 4 * m]) then
  finishPage(KEYS[1], KEYS[3 + m], KEYS[4 + m], 14 + 4 * m)
  fDone(c, run, ARGV[13 + 4 * m])
end
out[m + 1] = run
out[m + 2] = -2
fFill(c, run, out)
return out
