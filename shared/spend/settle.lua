-- Replaces one call's reservation by what it cost (settled <= reserved by construction); idempotent: a call that
-- holds no reservation changes nothing. A cost of -1 only drops the reservation (a call that never got a row).
-- KEYS[1]: the organization's day hash   KEYS[2]: set of "<organization id>|<day>" with reservations
-- ARGV[1]: call id   ARGV[2]: cost (cents)   ARGV[3]: "<organization id>|<day>"
-- Returns the cents the call had reserved (0 when it held none).
local held = redis.call('HGET', KEYS[1], ARGV[1])
if not held then
  return 0
end
local n = tonumber(string.match(held, '^(%d+)'))
redis.call('HDEL', KEYS[1], ARGV[1])
local left = redis.call('HINCRBY', KEYS[1], 'reserved', -n)
if left < 0 then
  redis.call('HSET', KEYS[1], 'reserved', 0)
end
local cost = tonumber(ARGV[2])
if cost > 0 then
  redis.call('HINCRBY', KEYS[1], 'settled', cost)
end
if redis.call('HLEN', KEYS[1]) <= 2 then
  redis.call('SREM', KEYS[2], ARGV[3])
end
return n
