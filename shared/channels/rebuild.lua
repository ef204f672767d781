-- Replaces one organization's holds by those of its live calls in PostgreSQL (the rebuild after Redis lost its
-- state, or on a first start). Does nothing once the accounts' epoch exists: a rebuild that finished first has
-- written them, and admissions since then are in them.
-- KEYS[1]: used counter   KEYS[2]: holds hash   KEYS[3]: set of orgs with holds   KEYS[4]: the accounts' epoch
-- ARGV[1]: organization id   ARGV[2..]: call id, "channels:admitted_ms" pairs
-- Returns the channels held after the rebuild (-1 when the epoch existed).
if redis.call('EXISTS', KEYS[4]) == 1 then
  return -1
end
redis.call('DEL', KEYS[1], KEYS[2])
local sum = 0
for i = 2, #ARGV, 2 do
  redis.call('HSET', KEYS[2], ARGV[i], ARGV[i + 1])
  sum = sum + tonumber(string.match(ARGV[i + 1], '^(%d+)'))
end
if sum == 0 then
  redis.call('SREM', KEYS[3], ARGV[1])
else
  redis.call('SET', KEYS[1], sum)
  redis.call('SADD', KEYS[3], ARGV[1])
end
return sum
