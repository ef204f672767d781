-- Fixed one-window counter. KEYS[1]: counter; ARGV[1]: window length in ms.
-- Returns {count after this hit, ms until the window resets}. Atomic, so every replica shares one count.
local n = redis.call('INCR', KEYS[1])
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
return {n, ttl}
