-- Counts a batch of beacons' events (the collector gathers the beacons of one event-loop turn), atomically. The
-- variant of every event was computed by the server.
-- KEYS[1] live impressions  hash "test|variant|day" -> count
-- KEYS[2] live assignments  hash "test|visitor" -> "variant|ms"
-- KEYS[3] live conversions  hash "test|visitor" -> "variant|ms|goal"
-- KEYS[2+2i] seen hash of event i's test (visitor -> variant: one impression per visitor per test)
-- KEYS[3+2i] converted set of event i's test (one tag conversion per visitor per test)
-- ARGV[1] now (ms), ARGV[2] day (YYYY-MM-DD), then per event: kind (i or g), test, variant, goal, visitor
-- Returns one flag per event: 1 counted, 0 not (a repeat, or a goal of a visitor never shown the test).
local now, day = ARGV[1], ARGV[2]
local n = (#ARGV - 2) / 5
local out = {}
for i = 1, n do
  local b = 5 * (i - 1) + 2
  local kind, test, variant, goal, visitor = ARGV[b + 1], ARGV[b + 2], ARGV[b + 3], ARGV[b + 4], ARGV[b + 5]
  local seen, converted = KEYS[2 + 2 * i], KEYS[3 + 2 * i]
  out[i] = 0
  if kind == 'i' then
    if redis.call('HSETNX', seen, visitor, variant) == 1 then
      redis.call('HINCRBY', KEYS[1], test .. '|' .. variant .. '|' .. day, 1)
      redis.call('HSET', KEYS[2], test .. '|' .. visitor, variant .. '|' .. now)
      out[i] = 1
    end
  else
    local assigned = redis.call('HGET', seen, visitor)
    if assigned and redis.call('SADD', converted, visitor) == 1 then
      redis.call('HSET', KEYS[3], test .. '|' .. visitor, assigned .. '|' .. now .. '|' .. goal)
      out[i] = 1
    end
  end
end
return out
