-- Numbers a carrier webhook at receipt: the leg's next sequence number, or the one this delivery already got (the
-- carrier retried it), so a retried delivery maps to the same sequenced job id.
-- KEYS[1] = the leg's counter, KEYS[2] = the delivery's number; ARGV[1] = time to keep both (seconds)
local seen = redis.call('GET', KEYS[2])
if seen then return tonumber(seen) end
local n = redis.call('INCR', KEYS[1])
redis.call('EXPIRE', KEYS[1], ARGV[1])
redis.call('SET', KEYS[2], n, 'EX', ARGV[1])
return n
