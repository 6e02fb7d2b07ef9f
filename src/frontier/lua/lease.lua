-- The lease of a task's run: which process drives it (a `crawl-studio run`, an editor's Start Crawl). One holder
-- at a time, so a second driver of the same task is told instead of silently resuming or replacing the run. The
-- lease expires by itself (a holder killed with SIGKILL frees it after its TTL) and is renewed by its holder's
-- progress poll.
--
-- KEYS[1] lease key
-- ARGV[1] 'acquire' | 'renew' | 'release'   ARGV[2] owner token   ARGV[3] holder record (JSON, with .owner)
-- ARGV[4] TTL ms   ARGV[5] '1' to take the lease from another holder (acquire only)
--
-- Returns {1} when the caller holds the lease (or, for release, no longer does), else {0, holder record, PTTL}.
local current = redis.call('GET', KEYS[1])
local mine = current and cjson.decode(current).owner == ARGV[2]
if ARGV[1] == 'release' then
  if mine then redis.call('DEL', KEYS[1]) end
  return {1}
end
if current and not mine and not (ARGV[1] == 'acquire' and ARGV[5] == '1') then
  return {0, current, redis.call('PTTL', KEYS[1])}
end
if mine then
  redis.call('PEXPIRE', KEYS[1], ARGV[4])
else
  redis.call('SET', KEYS[1], ARGV[3], 'PX', ARGV[4])
end
return {1}
