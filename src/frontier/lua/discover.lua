-- Marks discovered URLs as seen and says which to enqueue. Atomic, so a URL found by many workers at once is
-- enqueued once. Fingerprints live in bucketed Redis sets of 63-bit integers (intset encoding: ~8 bytes a URL).
--
-- KEYS[1] stats hash of the run     KEYS[2] claim hash of the discovering job     KEYS[3] the task's meta hash
-- KEYS[4..3+m] seen bucket for each URL (aligned with its member)
-- KEYS[4+m], KEYS[5+m], KEYS[6+m] the items stream, the run's per-host tally and the job's BullMQ hash (finishing only)
-- ARGV[1] max pages (0 = none)      ARGV[2] claim TTL (s)     ARGV[3] run id     ARGV[4] m, the number of URLs
-- ARGV[5..4+m] fingerprint member of each URL
-- ARGV[5+m..] optional, to finish the page here when none of its URLs is to be enqueued (finishPage.lua,
--   prepended, as pageDone.lua does): the page's finish, as finishPage.lua takes it from ARGV[5+m]
--
-- Returns one code per URL: 1 enqueue, 0 already seen, 2 over the page limit, then one more element when asked
-- to finish: 1 if the page was finished, 0 if the caller must enqueue and call pageDone. An error when the run is
-- not the task's current run (Redis lost its data, or a new run replaced it): links of a run nobody watches any
-- more would otherwise re-seed an empty dedup set and re-crawl the site unseen.
-- A claim remembers what this job marked, so if its worker dies before enqueueing, the retry enqueues the same
-- URLs again instead of finding them "already seen" and losing them.
if redis.call('HGET', KEYS[3], 'run') ~= ARGV[3] then
  return redis.error_reply('RUNGONE run ' .. ARGV[3] .. ' is not the current run of this task')
end
local maxPages = tonumber(ARGV[1])
local m = tonumber(ARGV[4])
local out = {}
local dup, fresh, limited, reclaimed = 0, 0, 0, 0
for i = 4, 3 + m do
  local member = ARGV[i + 1]
  local field = KEYS[i] .. '|' .. member
  if redis.call('SADD', KEYS[i], member) == 1 then
    local n = redis.call('HINCRBY', KEYS[1], 'enqueued', 1)
    if maxPages > 0 and n > maxPages then
      redis.call('HINCRBY', KEYS[1], 'enqueued', -1)
      limited = limited + 1
      out[#out + 1] = 2
    else
      redis.call('HSET', KEYS[2], field, 1)
      fresh = fresh + 1
      out[#out + 1] = 1
    end
  elseif redis.call('HEXISTS', KEYS[2], field) == 1 then
    reclaimed = reclaimed + 1
    out[#out + 1] = 1
  else
    dup = dup + 1
    out[#out + 1] = 0
  end
end
if dup > 0 then redis.call('HINCRBY', KEYS[1], 'duplicates', dup) end
if limited > 0 then redis.call('HINCRBY', KEYS[1], 'skipped:limit', limited) end
if fresh > 0 then redis.call('EXPIRE', KEYS[2], tonumber(ARGV[2])) end
if #ARGV > 4 + m then
  if fresh + reclaimed > 0 then
    out[#out + 1] = 0
  else
    finishPage(KEYS[1], KEYS[4 + m], KEYS[2], KEYS[5 + m], KEYS[6 + m], 5 + m)
    out[#out + 1] = 1
  end
end
return out
