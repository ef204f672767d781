-- Repairs an organization's counter from its holds (the holds are the truth; the counter is their sum).
-- KEYS[1]: used counter   KEYS[2]: holds hash   KEYS[3]: set of orgs with holds   ARGV[1]: organization id
-- Returns {counter before, counter after}.
local before = tonumber(redis.call('GET', KEYS[1]) or '0')
local sum = 0
for _, v in ipairs(redis.call('HVALS', KEYS[2])) do
  sum = sum + tonumber(string.match(v, '^(%d+)'))
end
if sum == 0 then
  redis.call('DEL', KEYS[1])
  redis.call('SREM', KEYS[3], ARGV[1])
else
  redis.call('SET', KEYS[1], sum)
end
return {before, sum}
