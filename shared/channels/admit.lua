-- Admits one call's channels against its organization's limit, atomically (so over-admission is impossible).
-- KEYS[1]: used counter   KEYS[2]: holds hash (call id -> "channels:admitted_ms")   KEYS[3]: set of orgs with holds
-- KEYS[4]: the accounts' epoch (written when they were built from PostgreSQL; missing after Redis lost its state)
-- ARGV[1]: call id   ARGV[2]: channels   ARGV[3]: limit   ARGV[4]: now (ms)   ARGV[5]: organization id
-- Returns {admitted (1/0), channels in use after this call}, or {-1, 0} when the accounts are not built (rebuild
-- them from PostgreSQL first: an empty Redis would admit past the limit). Admitting a call that already holds is a
-- no-op.
if redis.call('EXISTS', KEYS[4]) == 0 then
  return {-1, 0}
end
local used = tonumber(redis.call('GET', KEYS[1]) or '0')
if redis.call('HEXISTS', KEYS[2], ARGV[1]) == 1 then
  return {1, used}
end
local n = tonumber(ARGV[2])
if used + n > tonumber(ARGV[3]) then
  return {0, used}
end
redis.call('INCRBY', KEYS[1], n)
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2] .. ':' .. ARGV[4])
redis.call('SADD', KEYS[3], ARGV[5])
return {1, used + n}
