-- Drops a batch once PostgreSQL holds it (its id is in optimize_rollup_batches).
-- KEYS[1..3] the batch's impressions, assignments, conversions; KEYS[4] the batch id; ARGV[1] the batch id
if redis.call('GET', KEYS[4]) == ARGV[1] then
  redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4])
  return 1
end
return 0
