-- Admits one call's channels against its organization's limit, atomically (so over-admission is impossible).
-- The dial's two checks that come before admission run in the same script, in the guardrails' order, so a dial
-- costs one round trip: the per-minute call rate (a fixed one-minute window, as shared/ratelimit) and the daily
-- spend cap (decided by the caller from Postgres and passed in).
-- KEYS[1]: used counter   KEYS[2]: holds hash (call id -> "channels:admitted_ms")   KEYS[3]: set of orgs with holds
-- KEYS[4]: call-rate window counter (ignored when ARGV[6] is 0)
-- ARGV[1]: call id   ARGV[2]: channels   ARGV[3]: limit   ARGV[4]: now (ms)   ARGV[5]: organization id
-- ARGV[6]: calls per minute (0: no rate check)   ARGV[7]: window (ms)   ARGV[8]: "1" when the spend cap allows
-- Returns {verdict, channels in use, ms until the rate window resets}; verdict: "ok", "rate", "spend", "channels".
-- Admitting a call that already holds is a no-op ("ok").
local ttl = 0
if tonumber(ARGV[6] or '0') > 0 then
  local n = redis.call('INCR', KEYS[4])
  ttl = redis.call('PTTL', KEYS[4])
  if ttl < 0 then
    redis.call('PEXPIRE', KEYS[4], ARGV[7])
    ttl = tonumber(ARGV[7])
  end
  if n > tonumber(ARGV[6]) then
    return {'rate', 0, ttl}
  end
end
if ARGV[8] == '0' then
  return {'spend', 0, ttl}
end
local used = tonumber(redis.call('GET', KEYS[1]) or '0')
if redis.call('HEXISTS', KEYS[2], ARGV[1]) == 1 then
  return {'ok', used, ttl}
end
local n = tonumber(ARGV[2])
if used + n > tonumber(ARGV[3]) then
  return {'channels', used, ttl}
end
redis.call('INCRBY', KEYS[1], n)
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2] .. ':' .. ARGV[4])
redis.call('SADD', KEYS[3], ARGV[5])
return {'ok', used + n, ttl}
