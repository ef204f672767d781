-- Settles a claimed record. KEYS[1]: record; ARGV[1]: request id that claimed it; ARGV[2]: 'store' or 'release';
-- ARGV[3]: status; ARGV[4]: body; ARGV[5]: headers (JSON); ARGV[6]: retention ms; ARGV[7]: request id of the stored
-- response when it is another request's (a durable record copied back), else ''.
-- Only the claimant settles it: a lease that expired and was re-claimed by another request is left alone.
if redis.call('HGET', KEYS[1], 'rid') ~= ARGV[1] then return 0 end
if ARGV[2] == 'store' then
  redis.call('HSET', KEYS[1], 'state', 'done', 'status', ARGV[3], 'body', ARGV[4], 'headers', ARGV[5])
  if ARGV[7] ~= '' then redis.call('HSET', KEYS[1], 'rid', ARGV[7]) end
  redis.call('PEXPIRE', KEYS[1], ARGV[6])
else
  redis.call('DEL', KEYS[1])
end
return 1
