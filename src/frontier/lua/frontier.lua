-- The compact frontier (issue 19), shared by the scripts that push, take and settle pages: prepended to each, as
-- finishPage.lua is (Redis scripts cannot include one another).
--
-- A waiting page costs one short string (frontier/record.ts: "<meta> <rule> <path>") in a list of its host and
-- priority band, instead of a BullMQ job (~1.2 KB). Only a window of pages, sized to the fleet, are BullMQ jobs.
-- Under the frontier's prefix F (frontier/keys.ts frontierKeys):
--   F..'q:'..band..':'..host  list: the host's waiting pages of that band, oldest first
--   F..'ready:'..band         zset: the band's hosts with waiting pages, scored by when the task may next take a page
--                             of the host (ms since EPOCH_S); PARKED is added while the host has `cap` pages in the
--                             window (Mercator's back queues: the window never fills with pages of one host that
--                             would only wait at its gate)
--   F..'bands'                zset: bands with waiting pages, scored by priority (1 first)
--   F..'next'                 hash: host -> when the task may next take one of its pages (hosts with a delay)
--   F..'win'                  hash: host -> its pages in the window
--   F..'meta'                 hash: run -> the run the frontier belongs to; n -> pages waiting; b:<band> -> pages
--                             waiting in the band; v -> a counter of every change (drain detection across partitions)
--   F..'transit'              hash: page id -> "<band> <host> <record>": the window, pages taken from the lists
--                             and not finished yet (whatever their BullMQ job's state)
--   F..'lease'                zset: page id -> until when the process that took the page may still be adding its job
-- A page's id is its URL's fingerprint (the first 16 hex digits of its SHA-1, as frontier's fingerprintHex), with
-- ".<stamp>" for a forced fetch; its job id is "<run>.<id>", under the BullMQ key prefix J.
--
-- Taking a page (fTake) moves it from its list into transit under a lease, atomically; the caller then adds its job
-- (deterministic id, so adding twice is a no-op). A process that dies between the two leaves the lease to expire:
-- any later fill sees the job missing and hands the page out again (fRecover). A page leaves transit when it is
-- finished (pageDone: atomically with its record for the store), skipped or finally failed (settle.lua), or when its
-- job is found gone or finished without that (fReconcile, drain.lua): a page is never lost, and a page whose
-- transit record is gone is finished and is never fetched again (processor's settled check).
--
-- Every script that prepends this reads the frontier's parameters with fConfig (ARGV, 8 values):
--   F (key prefix)  J (BullMQ job key prefix, "<prefix>:<queue>:")  delay ms between two pages of a host  cap (a
--   host's pages in the window at most)  lease ms  target (pages the window should hold, delayed jobs aside)
--   batch (the fewest pages a fill that comes with a finished page takes: fewer, and the pages wait for the next
--   fill, so the window is topped up a few pages at a time rather than one job add per page)  counted ('1' to keep
--   the change counter `v`: a task spread over partitions)

local PARKED = 1e14
local EPOCH_S = 1700000000
-- Lateness of a take that the next one of the host may make up: the host gate (politeness.lua) still spaces the
-- requests themselves, and a page that comes this much early waits there in place.
local SLACK_MS = 20

local function fConfig(i)
  local t = redis.call('TIME')
  return {
    F = ARGV[i], J = ARGV[i + 1], delay = tonumber(ARGV[i + 2]), cap = tonumber(ARGV[i + 3]),
    lease = tonumber(ARGV[i + 4]), target = tonumber(ARGV[i + 5]), batch = tonumber(ARGV[i + 6]),
    counted = ARGV[i + 7] == '1',
    now = (tonumber(t[1]) - EPOCH_S) * 1000 + tonumber(t[2]) / 1000,
    adds = {}, added = 0,
  }, i + 8
end

-- The page's URL, rebuilt as frontier/record.ts decodePage does.
local function fUrlOf(host, rec)
  local sp = string.find(rec, ' ', 1, true)
  local meta = string.sub(rec, 1, sp - 1)
  local path = string.match(rec, '(%S*)$')
  if string.find(meta, '.u', 1, true) then return path end
  local scheme = 'http'
  if string.byte(meta, 1) == 115 then scheme = 'https' end
  return scheme .. '://' .. host .. path
end

-- The page's id: its URL's fingerprint, or for a request (a method, a body) the fingerprint its record carries
-- (`.k`, of its deduplication key); then its force stamp.
local function fIdOf(host, rec)
  local id = string.match(rec, '^[^ ]-%.k(%x+)')
  if not id then id = string.sub(redis.sha1hex(fUrlOf(host, rec)), 1, 16) end
  local forced = string.match(rec, '^%S-%.f(%w+)')
  if forced then id = id .. '.' .. forced end
  return id
end

local function fBands(c)
  if not c.bands then c.bands = redis.call('ZRANGE', c.F .. 'bands', 0, -1) end
  return c.bands
end

-- A host's score in its bands: when its next page may be taken, parked while its window is full.
local function fScore(c, host, win)
  local nxt = tonumber(redis.call('HGET', c.F .. 'next', host) or c.now)
  if win >= c.cap then return nxt + PARKED end
  return nxt
end

-- Queues a page; the counters are added by fPushed, once per call.
local function fPush(c, host, band, rec)
  if redis.call('RPUSH', c.F .. 'q:' .. band .. ':' .. host, rec) == 1 then
    local win = tonumber(redis.call('HGET', c.F .. 'win', host) or '0')
    redis.call('ZADD', c.F .. 'ready:' .. band, fScore(c, host, win), host)
  end
  c.adds[band] = (c.adds[band] or 0) + 1
  c.added = c.added + 1
end

local function fPushed(c)
  for band, k in pairs(c.adds) do
    if redis.call('HINCRBY', c.F .. 'meta', 'b:' .. band, k) == k then
      redis.call('ZADD', c.F .. 'bands', tonumber(band), band)
      c.bands = nil
    end
  end
  if c.added > 0 then
    redis.call('HINCRBY', c.F .. 'meta', 'n', c.added)
    if c.counted then redis.call('HINCRBY', c.F .. 'meta', 'v', 1) end
  end
  c.adds = {}
  c.added = 0
end

-- Pages in the window that BullMQ could start now or has started: delayed jobs (retry backoff, a host's promised
-- start) wait anyway and do not count, or a burst of retries would stall the crawl until their backoff ends.
local function fInWindow(c)
  return redis.call('HLEN', c.F .. 'transit') - redis.call('ZCARD', c.J .. 'delayed')
end

-- Takes up to `need` pages from ready hosts, best band first, one page per host per round (round robin), into
-- transit; appends "n", id, band, host, record for each to `out`.
local function fTake(c, need, out)
  if need <= 0 then return 0 end
  local F = c.F
  local bands = fBands(c)
  local taken = 0
  local byBand = {}
  for _, band in ipairs(bands) do
    local rz = F .. 'ready:' .. band
    while need > 0 do
      local hosts = redis.call('ZRANGEBYSCORE', rz, '-inf', c.now, 'LIMIT', 0, need)
      if #hosts == 0 then break end
      for _, host in ipairs(hosts) do
        local q = F .. 'q:' .. band .. ':' .. host
        local rec = redis.call('LPOP', q)
        if rec then
          local id = fIdOf(host, rec)
          redis.call('HSET', F .. 'transit', id, band .. ' ' .. host .. ' ' .. rec)
          redis.call('ZADD', F .. 'lease', c.now + c.lease, id)
          out[#out + 1] = 'n'
          out[#out + 1] = id
          out[#out + 1] = band
          out[#out + 1] = host
          out[#out + 1] = rec
          need = need - 1
          taken = taken + 1
          byBand[band] = (byBand[band] or 0) + 1
          local win = redis.call('HINCRBY', F .. 'win', host, 1)
          if redis.call('EXISTS', q) == 0 then redis.call('ZREM', rz, host) end
          -- A host with a delay moves on by it; a host at its cap is parked. A host with neither keeps its place: it gives
          -- pages until its cap, then the next host does.
          if c.delay > 0 or win >= c.cap then
            local nxt = c.now
            if c.delay > 0 then
              nxt = math.max(tonumber(redis.call('HGET', F .. 'next', host) or '0'), c.now - SLACK_MS) + c.delay
              redis.call('HSET', F .. 'next', host, nxt)
            end
            if win >= c.cap then nxt = nxt + PARKED end
            for _, b in ipairs(bands) do redis.call('ZADD', F .. 'ready:' .. b, 'XX', nxt, host) end
          end
        else
          redis.call('ZREM', rz, host)
        end
      end
    end
  end
  for band, k in pairs(byBand) do
    if redis.call('HINCRBY', F .. 'meta', 'b:' .. band, -k) <= 0 then
      redis.call('HDEL', F .. 'meta', 'b:' .. band)
      redis.call('ZREM', F .. 'bands', band)
      c.bands = nil
    end
  end
  if taken > 0 then
    redis.call('HINCRBY', F .. 'meta', 'n', -taken)
    if c.counted then redis.call('HINCRBY', F .. 'meta', 'v', 1) end
  end
  return taken
end

-- A page leaves the window: finished, skipped, failed for good, or its job gone. Its host's window shrinks (and the
-- host is unparked); a host with nothing left forgets its schedule once it is past. 1 if the page was in transit.
local function fSettle(c, id)
  local F = c.F
  local v = redis.call('HGET', F .. 'transit', id)
  if not v then return 0 end
  redis.call('HDEL', F .. 'transit', id)
  redis.call('ZREM', F .. 'lease', id)
  if c.counted then redis.call('HINCRBY', F .. 'meta', 'v', 1) end
  local host = string.match(v, '^%S+ (%S+) ')
  local win = redis.call('HINCRBY', F .. 'win', host, -1)
  if win <= 0 then redis.call('HDEL', F .. 'win', host) end
  if win == c.cap - 1 then
    local nxt = tonumber(redis.call('HGET', F .. 'next', host) or c.now)
    for _, b in ipairs(fBands(c)) do redis.call('ZADD', F .. 'ready:' .. b, 'XX', nxt, host) end
  end
  if win <= 0 and c.delay > 0 then
    local nxt = tonumber(redis.call('HGET', F .. 'next', host) or '0')
    if nxt <= c.now then redis.call('HDEL', F .. 'next', host) end
  end
  return 1
end

-- Pages whose lease ran out: a job that exists was added (the lease is dropped); a missing one is handed out again,
-- as "r", id, band, host, record. The caller adds it, or its lease runs out again.
local function fRecover(c, run, out)
  local F = c.F
  for _, id in ipairs(redis.call('ZRANGEBYSCORE', F .. 'lease', '-inf', c.now, 'LIMIT', 0, 100)) do
    local v = redis.call('HGET', F .. 'transit', id)
    if not v or redis.call('EXISTS', c.J .. run .. '.' .. id) == 1 then
      redis.call('ZREM', F .. 'lease', id)
    else
      redis.call('ZADD', F .. 'lease', c.now + c.lease, id)
      local band, host, rec = string.match(v, '^(%S+) (%S+) (.*)$')
      out[#out + 1] = 'r'
      out[#out + 1] = id
      out[#out + 1] = band
      out[#out + 1] = host
      out[#out + 1] = rec
    end
  end
end

-- Whether BullMQ can still start or finish the job `jobId` (whose hash exists and has not finished): it is in one of
-- the states a job waits or runs in. A job in none of them (its place lost with a Redis restart while its hash was
-- kept, or moved by hand) would hold its place in the window for ever. `lists` caches the jobs of BullMQ's lists
-- (the window's jobs only, so short) across one reconcile: read once, not once per page.
local function fJobPlaced(c, jobId, lists)
  if not lists.read then
    lists.read = true
    for _, l in ipairs({'wait', 'active', 'paused'}) do
      for _, id in ipairs(redis.call('LRANGE', c.J .. l, 0, -1)) do lists[id] = true end
    end
  end
  if lists[jobId] then return true end
  for _, z in ipairs({'delayed', 'prioritized', 'waiting-children'}) do
    if redis.call('ZSCORE', c.J .. z, jobId) then return true end
  end
  return false
end

-- Transit records whose job is finished or gone without settling them (a worker killed between BullMQ failing the
-- job and settling it; a job removed by hand) are settled; a job that exists in no state BullMQ takes jobs from is
-- removed and its page handed out again (fRecover, in the same call, adds it anew). Then the window's count per host
-- is recounted from transit, its truth: a count that drifted (a write lost with a Redis restart) would park its host
-- for good, or let it past its cap; hosts parked under an older, smaller cap, or under a wrong count, are unparked.
-- Only pages whose lease is over: a younger one may still be on its way into BullMQ.
local function fReconcile(c, run)
  local F = c.F
  local settled = 0
  local lists = {}
  for _, id in ipairs(redis.call('HKEYS', F .. 'transit')) do
    if not redis.call('ZSCORE', F .. 'lease', id) then
      local jk = c.J .. run .. '.' .. id
      if redis.call('EXISTS', jk) == 0 or redis.call('HEXISTS', jk, 'finishedOn') == 1 then
        settled = settled + fSettle(c, id)
      elseif not fJobPlaced(c, run .. '.' .. id, lists) then
        redis.call('DEL', jk, jk .. ':lock', jk .. ':logs')
        redis.call('ZADD', F .. 'lease', 0, id)
      end
    end
  end
  local count = {}
  for _, v in ipairs(redis.call('HVALS', F .. 'transit')) do
    local host = string.match(v, '^%S+ (%S+) ')
    count[host] = (count[host] or 0) + 1
  end
  local was = {}
  local kv = redis.call('HGETALL', F .. 'win')
  for i = 1, #kv, 2 do was[kv[i]] = tonumber(kv[i + 1]) end
  local wrong = {}
  for host, n in pairs(was) do
    if count[host] ~= n then wrong[#wrong + 1] = host end
  end
  for host, _ in pairs(count) do
    if was[host] == nil then wrong[#wrong + 1] = host end
  end
  for _, host in ipairs(wrong) do
    local n = count[host] or 0
    if n > 0 then redis.call('HSET', F .. 'win', host, n) else redis.call('HDEL', F .. 'win', host) end
    for _, b in ipairs(fBands(c)) do redis.call('ZADD', F .. 'ready:' .. b, 'XX', fScore(c, host, n), host) end
  end
  for _, b in ipairs(fBands(c)) do
    for _, host in ipairs(redis.call('ZRANGEBYSCORE', F .. 'ready:' .. b, PARKED, '+inf')) do
      local win = tonumber(redis.call('HGET', F .. 'win', host) or '0')
      if win < c.cap then redis.call('ZADD', F .. 'ready:' .. b, fScore(c, host, win), host) end
    end
  end
  return settled
end

-- ms until a host of any band may give a page (0: one may now), or -1 when no host waits to.
local function fNextIn(c)
  local best = nil
  for _, b in ipairs(fBands(c)) do
    local first = redis.call('ZRANGE', c.F .. 'ready:' .. b, 0, 0, 'WITHSCORES')
    if first[2] then
      local s = tonumber(first[2])
      if s < PARKED and (best == nil or s < best) then best = s end
    end
  end
  if best == nil then return -1 end
  return math.max(0, math.ceil(best - c.now))
end

-- Tops the window up to its target when it lacks at least `batch` pages; `out` gets the pages to add. The usual
-- ending of a script that finished a page. (Pages whose lease ran out are handed out again by fill.lua.)
local function fFill(c, run, out)
  local need = c.target - fInWindow(c)
  if need >= c.batch then fTake(c, need, out) end
end

-- Whether the job `jobId` has finished its page already (fDone marked it): a second run of the same job (its lock
-- ran out on a starved worker and BullMQ gave it to another while the first went on; its worker killed between
-- pageDone and BullMQ's completion) must not count and store the page a second time (issue 23, item 4: "Pages done
-- 75" of "Discovered 60" after an outage).
local function fFinished(c, jobId)
  return redis.call('HGET', c.J .. jobId, 'csd') == '1'
end

-- The job `jobId` finished its page (pageDone): its hash is marked, so a second start of the job (its worker died
-- before BullMQ heard of the end) finishes without fetching again; and its page leaves the window. A job of another
-- run than `run` (a run replaced under it) settles nothing: the page id may be the new run's too.
local function fDone(c, run, jobId)
  local jk = c.J .. jobId
  if redis.call('EXISTS', jk) == 1 then redis.call('HSET', jk, 'csd', '1') end
  local p = run .. '.'
  if string.sub(jobId, 1, #p) == p then fSettle(c, string.sub(jobId, #p + 1)) end
end

-- Work left in a partition (drain.lua, drainPart.lua): BullMQ jobs in a state that can still produce work, pages
-- waiting in the frontier, pages in the window on their way into BullMQ. Transit records of jobs that ended without
-- settling are settled on the way (their job finished or was removed). 0 when the partition is done.
local function fPending(c, run, wait, active, paused, delayed, prioritized, children)
  -- A recurring task's next occurrence waits in "delayed" as a job scheduler job ("repeat:..."): it is not work of
  -- this run. Only a short delayed set is inspected; a long one holds page jobs anyway.
  local late = redis.call('ZCARD', delayed)
  if late > 0 and late <= 16 then
    for _, id in ipairs(redis.call('ZRANGE', delayed, 0, -1)) do
      if string.sub(id, 1, 7) == 'repeat:' then late = late - 1 end
    end
  end
  local pending = redis.call('LLEN', wait) + redis.call('LLEN', active) + redis.call('LLEN', paused)
    + late + redis.call('ZCARD', prioritized) + redis.call('ZCARD', children)
  if pending > 0 then return pending end
  pending = tonumber(redis.call('HGET', c.F .. 'meta', 'n') or '0')
  if pending > 0 then
    if redis.call('ZCARD', c.F .. 'bands') > 0 then return pending end
    -- Pages counted waiting, but no band has any (every script moves the counts with the lists and bands): a count
    -- that drifted (a write lost with a Redis restart) would keep the run from ever draining. The bands are the
    -- truth: nothing waits.
    for _, f in ipairs(redis.call('HKEYS', c.F .. 'meta')) do
      if string.sub(f, 1, 2) == 'b:' then redis.call('HDEL', c.F .. 'meta', f) end
    end
    redis.call('HSET', c.F .. 'meta', 'n', 0)
    pending = 0
  end
  -- With no job left that can run, a page still in the window either is on its way into BullMQ (no job yet, its
  -- lease running: wait for it, or for its lease to run out and a fill to hand it out again) or ended without
  -- settling (its job finished or removed: settle it now).
  for _, id in ipairs(redis.call('HKEYS', c.F .. 'transit')) do
    local jk = c.J .. run .. '.' .. id
    if redis.call('EXISTS', jk) == 1 then
      if redis.call('HEXISTS', jk, 'finishedOn') == 1 then fSettle(c, id) else pending = pending + 1 end
    elseif redis.call('ZSCORE', c.F .. 'lease', id) then
      pending = pending + 1
    else
      fSettle(c, id)
    end
  end
  return pending
end
