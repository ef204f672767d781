-- Counts one beacon's events for one visitor, atomically. The variant of every event was computed by the server.
-- KEYS[1] live impressions  hash "test|variant|day" -> count
-- KEYS[2] live assignments  hash "test|visitor" -> "variant|ms"
-- KEYS[3] live conversions  hash "test|visitor" -> "variant|ms|goal"
-- KEYS[2+2i] seen hash of event i's test (visitor -> variant: one impression per visitor per test)
-- KEYS[3+2i] converted set of event i's test (one tag conversion per visitor per test)
-- ARGV[1] visitor, ARGV[2] now (ms), ARGV[3] day (YYYY-MM-DD), then per event: kind (i or g), test, variant, goal
-- Returns the number of events counted (repeats and goals of visitors never shown the test are not).
local visitor, now, day = ARGV[1], ARGV[2], ARGV[3]
local counted = 0
local n = (#ARGV - 3) / 4
for i = 1, n do
  local kind, test, variant, goal = ARGV[4 * i], ARGV[4 * i + 1], ARGV[4 * i + 2], ARGV[4 * i + 3]
  local seen, converted = KEYS[2 + 2 * i], KEYS[3 + 2 * i]
  if kind == 'i' then
    if redis.call('HSETNX', seen, visitor, variant) == 1 then
      redis.call('HINCRBY', KEYS[1], test .. '|' .. variant .. '|' .. day, 1)
      redis.call('HSET', KEYS[2], test .. '|' .. visitor, variant .. '|' .. now)
      counted = counted + 1
    end
  else
    local assigned = redis.call('HGET', seen, visitor)
    if assigned and redis.call('SADD', converted, visitor) == 1 then
      redis.call('HSET', KEYS[3], test .. '|' .. visitor, assigned .. '|' .. now .. '|' .. goal)
      counted = counted + 1
    end
  end
end
return counted
