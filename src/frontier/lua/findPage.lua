-- Looks for a page in one of the frontier's lists (Find URL, frontier/record.ts for the record's layout), a slice at
-- a time so a long list never holds Redis up for long.
--
-- KEYS[1] the list   ARGV[1] what the record ends with (' ' then its path, or its whole URL for a '.u' record)
-- ARGV[2] the scheme's letter ('s' or 'h')   ARGV[3] first index   ARGV[4] how many to look at
-- Returns {index, record} of the first match, or {-1, ''}.
local from = tonumber(ARGV[3])
local tail = ARGV[1]
for i, rec in ipairs(redis.call('LRANGE', KEYS[1], from, from + tonumber(ARGV[4]) - 1)) do
  if #rec >= #tail and string.sub(rec, -#tail) == tail and string.byte(rec, 1) == string.byte(ARGV[2], 1) then
    return {from + i - 1, rec}
  end
end
return {-1, ''}
