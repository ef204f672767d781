-- Claims an idempotency record or reports the existing one.
-- KEYS[1]: record; ARGV[1]: request fingerprint; ARGV[2]: request id; ARGV[3]: lease ms for a running request.
-- Returns {'new'} when claimed, else {state, fingerprint, request id, status, body, headers}.
local cur = redis.call('HMGET', KEYS[1], 'state', 'fp', 'rid', 'status', 'body', 'headers')
if not cur[1] then
  redis.call('HSET', KEYS[1], 'state', 'running', 'fp', ARGV[1], 'rid', ARGV[2])
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
  return {'new'}
end
return cur
