-- Admits one call under its organization's daily spend cap, atomically: reserves what the call may cost at most,
-- min(its worst case, the cap's remaining money), and refuses when the remaining money is below the call's minimum.
-- KEYS[1]: the organization's day hash {settled, reserved, <call id> = "cents:admitted_ms"}
-- KEYS[2]: set of "<organization id>|<day>" with reservations (for the reconciler)
-- ARGV[1]: call id   ARGV[2]: worst case (cents)   ARGV[3]: minimum (cents)   ARGV[4]: cap (cents)
-- ARGV[5]: now (ms)   ARGV[6]: "<organization id>|<day>"   ARGV[7]: key lifetime (s)
-- Returns {1 admitted / 0 refused / -1 not seeded (rebuild it from PostgreSQL first), reserved for this call,
--          settled, reserved by all calls}.
if redis.call('HEXISTS', KEYS[1], 'settled') == 0 then
  return {-1, 0, 0, 0}
end
local settled = tonumber(redis.call('HGET', KEYS[1], 'settled'))
local reserved = tonumber(redis.call('HGET', KEYS[1], 'reserved') or '0')
local held = redis.call('HGET', KEYS[1], ARGV[1])
if held then
  return {1, tonumber(string.match(held, '^(%d+)')), settled, reserved}
end
local remaining = tonumber(ARGV[4]) - settled - reserved
local minimum = tonumber(ARGV[3])
if remaining <= 0 or remaining < minimum then
  return {0, 0, settled, reserved}
end
local take = math.min(tonumber(ARGV[2]), remaining)
redis.call('HINCRBY', KEYS[1], 'reserved', take)
redis.call('HSET', KEYS[1], ARGV[1], take .. ':' .. ARGV[5])
redis.call('EXPIRE', KEYS[1], tonumber(ARGV[7]))
redis.call('SADD', KEYS[2], ARGV[6])
return {1, take, settled, reserved + take}
