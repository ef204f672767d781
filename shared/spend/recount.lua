-- Repairs an organization's day counter from its reservations (they are the truth; the counter is their sum).
-- KEYS[1]: the organization's day hash   KEYS[2]: set of "<organization id>|<day>" with reservations
-- ARGV[1]: "<organization id>|<day>"
-- Returns {reserved before, reserved after}.
local before = tonumber(redis.call('HGET', KEYS[1], 'reserved') or '0')
local sum = 0
local fields = redis.call('HGETALL', KEYS[1])
for i = 1, #fields, 2 do
  local f = fields[i]
  if f ~= 'settled' and f ~= 'reserved' then
    sum = sum + tonumber(string.match(fields[i + 1], '^(%d+)'))
  end
end
if redis.call('EXISTS', KEYS[1]) == 1 then
  redis.call('HSET', KEYS[1], 'reserved', sum)
end
if sum == 0 then
  redis.call('SREM', KEYS[2], ARGV[1])
end
return {before, sum}
