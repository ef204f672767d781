-- Takes up to ARGV[3] tokens of a fixed window. KEYS[1]: counter; ARGV[1]: window length in ms; ARGV[2]: limit.
-- Returns {tokens taken so far in this window, ms until the window resets, tokens granted now}. Atomic, so every
-- replica shares one count; the count never passes the limit, so no token is ever granted twice.
local limit = tonumber(ARGV[2])
local n = tonumber(redis.call('GET', KEYS[1]) or '0')
local grant = math.min(tonumber(ARGV[3]), limit - n)
if grant > 0 then
  n = redis.call('INCRBY', KEYS[1], grant)
else
  grant = 0
end
local ttl = redis.call('PTTL', KEYS[1])
if ttl == -1 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
elseif ttl == -2 then
  ttl = tonumber(ARGV[1])
end
return {n, ttl, grant}
