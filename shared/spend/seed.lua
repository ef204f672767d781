-- Rebuilds an organization's day from PostgreSQL (after Redis lost it, or on its first call of the day): settled
-- spend and the reservations of its live calls. Does nothing when the day is already there (another process
-- seeded it first: admissions since then are in it).
-- KEYS[1]: the organization's day hash   KEYS[2]: set of "<organization id>|<day>" with reservations
-- ARGV[1]: settled (cents)   ARGV[2]: "<organization id>|<day>"   ARGV[3]: key lifetime (s)
-- ARGV[4..]: call id, "cents:admitted_ms" pairs
-- Returns 1 when seeded, 0 when it already existed.
if redis.call('HEXISTS', KEYS[1], 'settled') == 1 then
  return 0
end
local reserved = 0
for i = 4, #ARGV, 2 do
  redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
  reserved = reserved + tonumber(string.match(ARGV[i + 1], '^(%d+)'))
end
redis.call('HSET', KEYS[1], 'settled', ARGV[1], 'reserved', reserved)
redis.call('EXPIRE', KEYS[1], tonumber(ARGV[3]))
if #ARGV >= 4 then
  redis.call('SADD', KEYS[2], ARGV[2])
end
return 1
