-- Releases one call's channels; idempotent (a call that holds nothing releases nothing).
-- KEYS[1]: used counter   KEYS[2]: holds hash   KEYS[3]: set of orgs with holds
-- ARGV[1]: call id   ARGV[2]: organization id
-- Returns the channels released (0 when the call held none).
local hold = redis.call('HGET', KEYS[2], ARGV[1])
if not hold then
  return 0
end
local n = tonumber(string.match(hold, '^(%d+)'))
redis.call('HDEL', KEYS[2], ARGV[1])
local left = redis.call('DECRBY', KEYS[1], n)
if left < 0 then
  redis.call('SET', KEYS[1], 0)
end
if redis.call('HLEN', KEYS[2]) == 0 then
  redis.call('DEL', KEYS[1])
  redis.call('SREM', KEYS[3], ARGV[2])
end
return n
