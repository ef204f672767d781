-- Starts (or resumes) a rollup batch: the live counters are renamed to the batch keys in one step, so events that
-- arrive afterwards go to new live keys. A batch left by a crashed run is returned again instead of a new one.
-- KEYS[1..3] live impressions, assignments, conversions; KEYS[4..6] the batch's; KEYS[7] the batch id
-- ARGV[1] the id for a new batch. Returns the batch id, or false when there is nothing to roll up.
local current = redis.call('GET', KEYS[7])
if current then return current end
local any = false
for i = 1, 3 do
  if redis.call('EXISTS', KEYS[i]) == 1 then
    redis.call('RENAME', KEYS[i], KEYS[i + 3])
    any = true
  end
end
if not any then return false end
redis.call('SET', KEYS[7], ARGV[1])
return ARGV[1]
